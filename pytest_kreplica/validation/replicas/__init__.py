"""The replica-log verifier: snapshot every replica's log into the run directory, compare
them batch by batch on Spark, and look lost ids up in them (HISTORY.md "Replica logs").

Modules: ``batches`` (v2 batch reader), ``records`` (record ids, decompression),
``layout`` (replicas.json), ``snapshot`` (copy logs at rest), ``verify`` (Spark
comparison), ``locate`` (lost or merely unseen?), ``cli`` (``kreplica verify-logs``).
Nothing heavy is imported here.
"""
