"""The results store: every case of every run as one row of a SQLite file, and the
``kreplica results`` / ``kreplica compare`` commands that read it (docs/results.md).

``store`` writes and reads the file (WAL, busy timeout, one transaction per row),
``rows`` builds a row from a run directory, ``stats`` computes pass and flake rates, trends
and what moved, ``cli`` prints them and ``html`` plots them (matplotlib, loaded there only).
"""
