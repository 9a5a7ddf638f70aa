"""Empty program: each profiler's start-up cost is measured on it."""
