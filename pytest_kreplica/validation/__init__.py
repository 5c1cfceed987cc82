"""Validation: Spark, the history checker, the replica verifier and the verdict."""
