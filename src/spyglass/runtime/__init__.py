"""Running a target program under the profiler, and the profiling session itself."""
