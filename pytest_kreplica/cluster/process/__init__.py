"""The ``process`` backend: KRaft nodes as local JVMs (``cluster``), how their storage is
formatted, a broker joining a running cluster, nodes of mixed versions."""
