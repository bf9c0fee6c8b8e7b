"""fuzz_target: a libFuzzer harness and its test (fuzz/README in docs/development.md)."""

def fuzz_target(name, srcs, deps, corpus = [], data = []):
    """`name`: the harness binary; `name`_test runs it over its seeds.

    Plain builds link replay_main (every seed once); --config=fuzz (clang,
    scripts/fuzz.sh) links libFuzzer and fuzzes for $FUZZ_SECONDS.
    """
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//fuzz:libfuzzer": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        testonly = True,
    )
    seeds = native.glob(["corpus/" + name + "/**"])
    native.sh_test(
        name = name + "_test",
        size = "small",
        srcs = ["run_fuzz_test.sh"],
        args = ["$(location :" + name + ")", "fuzz/corpus/" + name] + corpus,
        data = [":" + name] + seeds + data,
    )
