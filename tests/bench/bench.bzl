"""A benchmark: the binary (`bazel run -c opt //tests/bench:NAME`) and its
smoke test NAME_smoke (the same sources run with --smoke in `bazel test`:
tiny sizes; fails when the benchmark cannot do its work, never on timing)."""

def bench(name, srcs, deps, data = [], smoke_size = "medium", testonly = False):
    native.cc_binary(name = name, srcs = srcs, data = data, deps = deps, testonly = testonly)
    native.cc_test(
        name = name + "_smoke",
        size = smoke_size,
        srcs = srcs,
        args = ["--smoke"],
        data = data,
        deps = deps,
    )
