"""The local driver's JIT mode (``validation/engine/jit.py``): the plugin's preference, the env
override, and a bad env value as one line."""

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_kreplica.errors import InputError
from pytest_kreplica.validation.engine import jit


@pytest.fixture
def preferred():
    """Restores this process's preference (the plugin set ``quick`` at configure)."""
    before = jit.prefer("full")
    yield jit.prefer
    jit.prefer(before)


def test_the_cli_default_is_full_and_the_plugin_asks_for_quick(preferred, monkeypatch):
    monkeypatch.delenv(jit.ENV_JIT, raising=False)
    preferred("full")  # a process that never asked: the kreplica CLI
    assert (jit.mode(), jit.java_option()) == ("full", "")
    preferred("quick")
    assert jit.mode() == "quick"
    assert jit.java_option().split() == ["-XX:TieredStopAtLevel=1", jit.CODE_CACHE]


def test_quick_keeps_the_full_code_cache():
    """C1 alone would shrink the code cache to 48 MB, which a driver living for a whole
    test run fills (the SparkContext then stops): the real JVM, asked for its flags."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    flags = subprocess.run([java, *jit.OPTIONS["quick"].split(), "-XX:+PrintFlagsFinal",
                            "-version"], capture_output=True, text=True, timeout=60).stdout
    size = next(int(line.split("=")[1].split()[0]) for line in flags.splitlines()
                if " ReservedCodeCacheSize " in line)
    assert size >= 240 * 1024 * 1024, size


def test_the_env_wins_over_the_preference(preferred, monkeypatch):
    preferred("quick")
    monkeypatch.setenv(jit.ENV_JIT, "full")
    assert jit.java_option() == ""


def test_a_bad_env_value_is_one_line_naming_the_allowed_modes(monkeypatch):
    monkeypatch.setenv(jit.ENV_JIT, "fast")
    with pytest.raises(InputError) as err:
        jit.mode()
    assert str(err.value) == ("env KREPLICA_SPARK_JIT: 'fast' is not a JIT mode "
                              "(allowed: quick, full)")


def test_an_unknown_preference_is_a_programming_error():
    with pytest.raises(ValueError, match="allowed: quick, full"):
        jit.prefer("fast")


def test_a_one_off_command_over_a_small_input_asks_for_c1_alone(preferred, monkeypatch,
                                                                   tmp_path):
    """``kreplica check`` / ``verify-logs`` size their input before the driver starts: a
    small one compiles with C1 alone, a large or unreadable one keeps the default."""
    from pytest_kreplica.validation.checker.core import history_bytes
    from pytest_kreplica.validation.engine.spark import SMALL_INPUT_BYTES, one_off_jit
    from pytest_kreplica.validation.replicas.cli import replica_bytes

    monkeypatch.delenv(jit.ENV_JIT, raising=False)
    one_off_jit(SMALL_INPUT_BYTES)
    one_off_jit(None)
    assert jit.mode() == "full"
    one_off_jit(SMALL_INPUT_BYTES - 1)
    assert jit.mode() == "quick"

    lost = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "lost"
    assert history_bytes(lost) == sum((lost / f"{n}.jsonl").stat().st_size
                                      for n in ("sends", "polls"))
    assert history_bytes(tmp_path / "nowhere") is None  # check says why, in one line
    assert replica_bytes(str(lost)) is None  # no replicas.json: verify-logs says so
