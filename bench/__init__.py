"""Benchmarks, run with `python3 tasks.py bench`. They need ../shared/corpora."""
