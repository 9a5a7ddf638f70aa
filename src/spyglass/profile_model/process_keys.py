"""The memory figures each process of a run keeps in a merged profile's `processes`
(schema v2). A module of its own, without imports: the supervisor needs it on every run,
and importing the memory helpers costs start-up."""

PROCESS_KEYS = ("max_footprint_mb", "mem_alloc_mb", "copy_mb")
