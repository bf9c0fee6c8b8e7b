"""The Debian libraries Mariposa links, named once for system.BUILD and for
the statically linked `mariposa` CLI (cli/BUILD.bazel)."""

ABSL = [
    "absl_statusor", "absl_status", "absl_cord", "absl_cordz_info",
    "absl_cord_internal", "absl_cordz_functions", "absl_exponential_biased",
    "absl_cordz_handle", "absl_bad_optional_access", "absl_strerror",
    "absl_str_format_internal", "absl_synchronization", "absl_graphcycles_internal",
    "absl_stacktrace", "absl_symbolize", "absl_debugging_internal",
    "absl_demangle_internal", "absl_malloc_internal", "absl_time",
    "absl_civil_time", "absl_time_zone", "absl_strings", "absl_strings_internal",
    "absl_raw_hash_set", "absl_hashtablez_sampler", "absl_hash", "absl_city",
    "absl_low_level_hash", "absl_random_distributions", "absl_random_seed_sequences",
    "absl_random_internal_pool_urbg", "absl_random_internal_randen",
    "absl_random_internal_randen_hwaes", "absl_random_internal_randen_hwaes_impl",
    "absl_random_internal_randen_slow", "absl_random_internal_platform",
    "absl_random_internal_seed_material", "absl_random_seed_gen_exception",
    "absl_throw_delegate", "absl_raw_logging_internal", "absl_base",
    "absl_spinlock_wait", "absl_int128", "absl_bad_variant_access",
    "absl_log_severity",
]

PROTOBUF = ["protobuf"]

# gRPC without OpenSSL and zlib, which stay shared (GRPC_SHARED).
GRPC = [
    "grpc++_reflection", "grpc++", "grpc", "address_sorting", "re2",
    "upb", "cares", "gpr",
]

GRPC_SHARED = ["z", "ssl", "crypto"]

def shared(libs):
    return ["-l" + l for l in libs]

# Linker options of a binary that takes gRPC, protobuf, Abseil, yaml-cpp
# and SQLite from their static archives (Debian ships them beside the shared
# ones). They come before the dependencies' -l options on the link line;
# with --as-needed the shared libraries they replace are then not needed
# and not recorded. libc, libstdc++, OpenSSL and zlib stay shared.
def static_linkopts():
    archives = GRPC + PROTOBUF + ["yaml-cpp", "sqlite3"] + ABSL
    return ["-Wl,--as-needed", "-Wl,--start-group"] + ["-l:lib%s.a" % l for l in archives] + ["-Wl,--end-group"]
