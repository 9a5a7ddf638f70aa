"""Benchmark harness for spyglass (stdlib only). Entry point: bench/run.py."""
