"""The profile as a document: reading and checking it (io, bounds), its memory figures,
the read helpers and transformations the reporters share (queries, transforms), and adding
profiles up or comparing them (merging, diffing).

Empty on purpose: a profiled process imports one or two of these modules on its way out,
and must not pay for the others.
"""
