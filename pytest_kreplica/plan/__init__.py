"""The test plan, shipped with the package: one scenario test per scenario, parametrized by
every selected matrix case (the shipped matrices, or the project's ``matrices`` directory).

Run it from any directory, as pytest runs any installed test package::

    pytest --pyargs pytest_kreplica.plan -m smoke -n 2 --kreplica-output kreplica-results

    test_replication.py  scenario ``replication``: C.1 and the failure matrices C.2-C.5
    test_mirror.py       scenario ``mirror``: MirrorMaker 2 under faults (C.6)
    test_upgrade.py      scenario ``version-compat``: mixed versions and rolling upgrades (C.7)

A checkout's ``tests/system`` imports these same functions, so ``pytest tests/system`` and
the command above collect the same case ids with the same markers.
"""
