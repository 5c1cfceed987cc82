"""The log model (seed 000): a stateful Hypothesis property test of one topic's
log against a running cluster, through the Kafka protocol.

Modules: ``model`` (the pure model and its checks), ``system`` (the topic through
kafka-python and the Cluster API), ``machine`` (the rule-based state machine: weighted
actions, invariants), ``runner`` (profiles, the run, the replica check), ``replay``
(replay files), ``pytest_plugin`` (marker, ``--kreplica-replay``, fixtures). Nothing heavy is
imported here. See docs/log-model.md.
"""
