"""``kreplica results`` and ``kreplica compare`` on stores of planted rows: the per-case
lines, the glob, the HTML page, what compare prints and its exit codes, importing run
directories (once), and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.cli import main
from pytest_kreplica.results import store


def planted(path, rows):
    conn = store.connect(path)
    for r in rows:
        store.append(conn, {"params_key": "p", **r})
    conn.close()
    return path


def run(kafka: str, run_id: str, case: str, outcome: str, election: float | None,
        duration: float, unavailable: float | None = None):
    return {"run_id": run_id, "case_id": case, "outcome": outcome, "kafka_version": kafka,
            "election_max_s": election, "duration_s": duration,
            "unavailability_s": unavailable, "phases": {"produce": duration / 2}}


@pytest.fixture
def history(tmp_path):
    """Run A (Kafka 3.9.2): both cases pass. Run B (4.1.1): leader fails once in three and
    its election doubled; smoke stays."""
    rows = [run("3.9.2", "A", "leader-hard", "passed", 1.0, 10.0, 2.0),
            run("3.9.2", "A", "leader-hard", "passed", 1.2, 10.5, 2.1),
            run("3.9.2", "A", "smoke-p1", "passed", None, 5.0),
            run("4.1.1", "B", "leader-hard", "passed", 2.4, 10.2, 2.0),
            run("4.1.1", "B", "leader-hard", "failed", 2.6, 10.4, 2.2),
            run("4.1.1", "B", "leader-hard", "passed", 2.5, 10.3, 2.1),
            run("4.1.1", "B", "smoke-p1", "passed", None, 5.1)]
    return planted(tmp_path / "results.sqlite", rows)


def test_results_prints_runs_rates_and_trends(history, capsys):
    assert main(["results", "--store", str(history)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["case", "runs", "pass", "flake", "election",
                                "unavailability", "duration"]
    leader = lines[1].split()
    assert leader[:4] == ["leader-hard", "5", "80%", "20%"]
    assert "1.0–2.6)" in lines[1] and "last 2.5s" in lines[1]  # election trend
    assert "(2.0–2.2)" in lines[1]  # unavailability
    smoke = lines[2].split()
    assert smoke[:5] == ["smoke-p1", "2", "100%", "0%", "-"]


def test_results_case_glob_and_no_match(history, capsys):
    assert main(["results", "--store", str(history), "--case", "smoke-*"]) == 0
    out = capsys.readouterr().out
    assert "smoke-p1" in out and "leader-hard" not in out
    assert main(["results", "--store", str(history), "--case", "nothing-*"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"kreplica results: {history}: no runs of a case matching 'nothing-*'"


def test_results_html_has_a_plot_per_case(history, tmp_path, capsys):
    out = tmp_path / "page" / "results.html"
    assert main(["results", "--store", str(history), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"page: {out}"
    page = out.read_text()
    assert page.count("<svg") == 2 and "leader-hard" in page and "80%" in page
    assert "unavailability (s)" in page and "election (s)" in page


def test_compare_two_runs_names_the_changed_verdict_and_what_moved(history, capsys):
    assert main(["compare", "A", "B", "--store", str(history)]) == 1  # a pass went red
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "run A -> run B: 2 case(s) in both"
    assert "leader-hard: verdict passed -> flaky" in lines
    election = [line for line in lines if "election_max_s" in line]
    assert election == ["leader-hard: election_max_s 1.10 -> 2.50 (spread 0.20, runs 2/3)"]
    # leader-hard's duration and unavailability stayed within their spread; smoke-p1 ran
    # once on each side, so any change is shown, saying its spread is unknown
    assert lines[3:] == [
        "smoke-p1: duration_s 5.00 -> 5.10 (spread 0.00, runs 1/1) (one run each: spread "
        "unknown)",
        "smoke-p1: phase:produce 2.50 -> 2.55 (spread 0.00, runs 1/1) (one run each: spread "
        "unknown)"]


def test_compare_two_kafka_versions_the_other_way_round(history, capsys):
    assert main(["compare", "4.1.1", "3.9.2", "--store", str(history)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Kafka 4.1.1 -> Kafka 3.9.2: 2 case(s) in both"
    assert "leader-hard: verdict flaky -> passed" in lines


def test_compare_without_change(tmp_path, capsys):
    path = planted(tmp_path / "s.sqlite", [run("4.1.1", "A", "x", "passed", 1.0, 5.0),
                                           run("4.1.1", "B", "x", "passed", 1.0, 5.0)])
    assert main(["compare", "A", "B", "--store", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == ("no verdict changed, no figure "
                                                        "moved beyond its spread")


@pytest.mark.parametrize("argv, words", [
    (["results", "--store", "{tmp}/none.sqlite"], "none.sqlite: no such results store"),
    (["compare", "A", "Z", "--store", "{store}"],
     "Z: not a run id nor a Kafka version of the store; runs: A, B; Kafka versions: "
     "3.9.2, 4.1.1"),
    (["results", "--store", "{tmp}/new.sqlite", "--import", "{tmp}/missing"],
     "missing: no such run directory"),
])
def test_bad_input_is_one_line_and_exit_2(history, tmp_path, capsys, argv, words):
    argv = [a.format(tmp=tmp_path, store=history) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert words in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err


def test_import_appends_old_run_directories_once(tmp_path, capsys):
    root = tmp_path / "old-run"
    for name, passed in (("smoke-a", True), ("smoke-b", False)):
        run_dir = root / name
        run_dir.mkdir(parents=True)
        (run_dir / "sends.jsonl").write_text("")
        (run_dir / "verdict.json").write_text(json.dumps({
            "case": name, "passed": passed, "valid": passed, "duration_s": 3.0,
            "parameters": {"seed": 1}}))
        (run_dir / "run.json").write_text(json.dumps({"start_time": 5.0, "matrix": "smoke"}))
    (root / "no-verdict").mkdir()
    (root / "no-verdict" / "sends.jsonl").write_text("")
    path = tmp_path / "results.sqlite"
    assert main(["results", "--store", str(path), "--import", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: 2 row(s) added, 0 already there"
    assert [line.split()[:3] for line in out[2:]] == [["smoke-a", "1", "100%"],
                                                      ["smoke-b", "1", "0%"]]
    assert main(["results", "--store", str(path), "--import", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{path}: 0 row(s) added, 2 already there"
    rows = store.rows(store.connect(path))
    assert {r["run_id"].split("-")[0] for r in rows} == {"import"}
    assert {r["matrix"] for r in rows} == {"smoke"}
