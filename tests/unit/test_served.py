"""The served-check protocol (``validation/served.py``) over a real loopback socket, with
fake operations in place of Spark: the answer, an error of the package raised again as the
same class, a crash as a one-line CheckError naming the log, no answer without the token,
and the desk counted as in use while a check runs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pytest_kreplica.errors import CheckError, HistoryError
from pytest_kreplica.validation import served

TOKEN = "secret-token"
LOG = Path("server.log")


@pytest.fixture
def desk():
    started = threading.Event()
    release = threading.Event()

    def slow(master, req):
        started.set()
        release.wait(30)
        return {"done": True}

    ops = {
        "echo": lambda master, req: {"master": master, "run_dir": req["run_dir"],
                                     "semantics": req.get("semantics")},
        "unreadable": lambda master, req: (_ for _ in ()).throw(
            HistoryError(f"{req['run_dir']}/sends.jsonl:3: not JSON")),
        "bug": lambda master, req: {}["missing"],
        "slow": slow,
    }
    d = served.Desk("local[2]", TOKEN, ops=ops)
    d.started, d.release = started, release
    thread = threading.Thread(target=d.serve_forever, daemon=True)
    thread.start()
    yield d
    release.set()
    d.shutdown()
    d.server_close()


def _ask(d, op, token=TOKEN, **extra):
    return served.exchange({"served_port": d.port},
                           {"token": token, "op": op, "run_dir": "/runs/a", **extra}, LOG)


def test_an_answer_comes_back_as_sent(desk):
    assert _ask(desk, "echo", semantics="exactly-once") == {
        "master": "local[2]", "run_dir": "/runs/a", "semantics": "exactly-once"}


def test_an_error_of_the_package_is_raised_again_as_its_own_class(desk):
    with pytest.raises(HistoryError, match=r"^/runs/a/sends.jsonl:3: not JSON$"):
        _ask(desk, "unreadable")


def test_a_crash_is_one_line_naming_the_log(desk):
    with pytest.raises(CheckError) as caught:
        _ask(desk, "bug")
    text = str(caught.value)
    assert "KeyError: 'missing'" in text and str(LOG) in text and "\n" not in text, text


def test_a_caller_without_the_token_gets_no_answer(desk):
    with pytest.raises(CheckError, match="ended without an answer"):
        _ask(desk, "echo", token="guess")


def test_an_unknown_operation_is_refused(desk):
    with pytest.raises(CheckError, match="unknown request 'rm'"):
        _ask(desk, "rm")


def test_the_desk_is_in_use_while_a_check_runs(desk):
    assert desk.idle_for() >= 0.0
    answers = []
    asker = threading.Thread(target=lambda: answers.append(_ask(desk, "slow")), daemon=True)
    asker.start()
    assert desk.started.wait(30), "the slow operation never started"
    assert desk.idle_for() == 0.0
    desk.release.set()
    asker.join(30)
    assert answers == [{"done": True}]
    assert 0.0 < desk.idle_for() < 30.0


def test_a_bad_switch_value_is_one_line(monkeypatch):
    monkeypatch.setenv(served.ENV_SERVED, "yes")
    with pytest.raises(Exception, match=r"KREPLICA_SPARK_SERVED='yes': allowed: 0, 1"):
        served.enabled()
