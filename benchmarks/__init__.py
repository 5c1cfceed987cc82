"""Benchmark scripts (never timed tests); ``python -m benchmarks`` runs them (run_all.py)."""
