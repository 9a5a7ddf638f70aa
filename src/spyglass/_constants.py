"""The native core's constants that `spyglass run` needs before the program starts (its
defaults, limits and version, and the bytecode flags every process of a run is given),
mirrored here so that the program is started before the extension is loaded: loading it
(with the C++ runtime) costs milliseconds, which the supervisor then spends while the
program runs instead. The timeline caps are here too, so that reading and reporting a
profile (the run's end, `spyglass view`) needs no extension at all.
tests/unit/test_shared_constants.py holds each to `_native`'s value."""

VERSION = "0.1.0"  # pyproject.toml's; CMake builds without scikit-build read it there too

DEFAULT_INTERVAL_S = 0.01
MIN_INTERVAL_S = 0.001
MAX_INTERVAL_S = 10.0

DEFAULT_MEMORY_WINDOW = 64 * 1024
MIN_MEMORY_WINDOW = 4 * 1024
MAX_MEMORY_WINDOW = 1 << 40

BYTECODE_FLAGS = {
    "jump_relative": 1,
    "jump_absolute": 2,
    "jump_backward": 4,
    "no_fallthrough": 8,
    "extended_arg": 16,
    "cache_shift": 8,
}

# The most points a run's footprint_timeline / a line's mem_timeline may have (the format's
# bounds), and the most the writers give a line's.
RUN_TIMELINE_POINTS = 200
LINE_TIMELINE_POINTS = 100
LINE_TIMELINE_POINTS_WRITTEN = 64
