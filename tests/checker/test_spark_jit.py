"""The plugin's local Spark driver really runs with the JIT mode it asked for (``jit.py``):
read back from the running JVM's own arguments, not from the configuration we wrote."""

import pytest

from pytest_kreplica.validation.engine import jit


def test_the_driver_jvm_runs_with_the_chosen_jit_mode(spark_session):
    try:  # a Spark Connect session has no SparkContext and no JVM in this process
        context = spark_session.sparkContext
        jvm = context._jvm
    except Exception:
        jvm = None
    if jvm is None or not context.master.startswith("local"):
        pytest.skip("the JIT mode applies to a local driver JVM only")
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                .getInputArguments())
    quick = "-XX:TieredStopAtLevel=1" in args
    assert quick == (jit.mode() == "quick"), args
    assert (jit.CODE_CACHE in args) == quick, args
