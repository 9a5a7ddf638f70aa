"""The figures each process of a run keeps in a merged profile's `processes`: read from
the field table, whose module imports nothing (the supervisor needs them on every run,
and importing the memory helpers costs start-up)."""

from spyglass.profile_model import fields

#: Every entry's (what each process's own profile says of itself).
ENTRY_KEYS = fields.names("process", presence=["written"])
#: Those of them that are figures (0 when the process's profile lacks them).
FIGURE_KEYS = fields.names("process", presence=["written"], merge=["sum"])
#: What a memory profile's entries add.
PROCESS_KEYS = fields.names("process", presence=["memory"])
