"""Which Spark a master string selects, and the Connect server's settings (no JVM started)."""

from __future__ import annotations

import types

import pytest

from pytest_kreplica import cli
from pytest_kreplica.errors import InputError
from pytest_kreplica.validation.engine import connect, spark


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "spark://h:7077", "connect",
                                 "auto", "sc://h:15002", "sc://localhost:1/;token=x"])
def test_accepted_masters(url):
    assert spark.resolve_master(url) == url


def test_connect_forms_are_connect_and_the_others_are_not():
    assert [spark.is_connect(u) for u in ("connect", "sc://h:1", "local[2]", "spark://h:1")] \
        == [True, True, False, False]


@pytest.mark.parametrize("url", ["yarn", "h:7077", "Connect", ""])
def test_a_bad_master_is_one_line_naming_the_forms(url, monkeypatch):
    monkeypatch.setenv(spark.ENV_MASTER, url or "x")
    with pytest.raises(InputError, match="sc://host:port"):
        spark.resolve_master(url or None)


def test_the_env_names_itself_when_its_master_is_bad(monkeypatch):
    monkeypatch.setenv(spark.ENV_MASTER, "yarn")
    with pytest.raises(InputError, match=f"env {spark.ENV_MASTER}: 'yarn'"):
        spark.resolve_master()


@pytest.mark.parametrize(("master", "cores"), [("local", 1), ("local[3]", 3),
                                               ("local[2,4]", 2)])
def test_local_cores(master, cores):
    assert spark.local_cores(master) == cores


def test_idle_timeout_default_and_bad_values(monkeypatch):
    monkeypatch.delenv(connect.ENV_IDLE, raising=False)
    assert connect.idle_seconds() == connect.DEFAULT_IDLE_S <= 60
    monkeypatch.setenv(connect.ENV_IDLE, "7.5")
    assert connect.idle_seconds() == 7.5
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv(connect.ENV_IDLE, bad)
        with pytest.raises(InputError, match=connect.ENV_IDLE):
            connect.idle_seconds()


def test_a_dead_supervisors_state_is_dropped(tmp_path):
    p = {"state": tmp_path / "s.json"}
    p["state"].write_text('{"pid": 999999999, "started": 1.0, "port": 1, "token": "t"}')
    assert connect.live_server(p) is None
    assert not p["state"].exists()


def test_auto_without_a_server_state_takes_no_lock_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path))
    assert connect.running_server() is None
    assert list(tmp_path.rglob("*")) == []


def _parsed_master(argv, monkeypatch) -> str | None:
    """The Spark master the ``kreplica`` command hands its sub-command (which is stubbed)."""
    seen = {}

    def record(args) -> int:
        seen["master"] = args.spark_master
        return 0

    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: types.SimpleNamespace(run_check=record))
    assert cli.main(["check", "somewhere", *argv]) == 0
    return seen["master"]


def test_the_command_defaults_to_auto_unless_the_option_or_the_env_says(monkeypatch):
    monkeypatch.delenv(spark.ENV_MASTER, raising=False)
    assert _parsed_master([], monkeypatch) == spark.AUTO
    assert _parsed_master(["--spark-master", "local[1]"], monkeypatch) == "local[1]"
    monkeypatch.setenv(spark.ENV_MASTER, "connect")
    assert _parsed_master([], monkeypatch) is None  # resolved from the env later
