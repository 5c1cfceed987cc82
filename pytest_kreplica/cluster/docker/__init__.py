"""The ``docker`` backend: one container per KRaft node (``cluster``), its images, link proxy,
partitions, owner labels and the watcher that removes a dead session's containers."""
