"""docs/results.md's commands, run as written (tests/doc_commands.py) in a project directory
holding a results store of planted rows (two Kafka versions) and an old run directory to
import: every command exits 0 without a traceback, the pytest ones collect cases, and the
files they name are written."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_kreplica.results import store
from tests import doc_commands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results.md"


def test_every_command_of_the_results_page_runs(tmp_path):
    conn = store.connect(tmp_path / "results.sqlite")
    for version, election in (("3.9.2", 1.0), ("3.9.2", 1.2), ("4.1.1", 2.5)):
        store.append(conn, {"run_id": f"run-{version}", "case_id": "smoke-p1-none-acks-1-sync",
                            "outcome": "passed", "kafka_version": version, "params_key": "p",
                            "election_max_s": election, "duration_s": 9.0})
    conn.close()
    old = tmp_path / "kreplica-results" / "smoke-p5-none-acks-1-sync"
    old.mkdir(parents=True)
    (old / "sends.jsonl").write_text("")
    (old / "verdict.json").write_text(json.dumps({"case": old.name, "passed": True,
                                                  "valid": True, "duration_s": 8.0}))
    failures, done = doc_commands.run_page(PAGE, tmp_path,
                                           doc_commands.clean_env(PYTHONPATH=str(ROOT)))
    assert failures == [], "\n".join(failures)
    kinds = [s.kind for s in done]
    assert kinds.count("collect") == 2 and kinds.count("run") == 5, done
    assert (tmp_path / "results.html").read_text().count("<svg") == 2
    rows = store.rows(store.connect(tmp_path / "results.sqlite"))
    assert [r["case_id"] for r in rows][-1] == "smoke-p5-none-acks-1-sync"
