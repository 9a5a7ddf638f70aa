"""Profiling the workers of a cluster job into one profile: the engine-neutral halves that
run in each worker (worker_side) and in the client (job); spyglass.dask binds them to Dask."""
