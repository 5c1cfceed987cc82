"""The report's Transactions section (history version 2): outcomes and the transactional
anomalies, red where they occurred; absent for a version 1 verdict."""

from __future__ import annotations

import re

from pytest_kreplica.report import build_verdict, write_report, write_verdict

from .synthetic import make_run


def _report(run_dir, counts):
    make_run(run_dir, messages=40)
    write_verdict(run_dir, build_verdict(
        case_id="transactions-hard", parameters={"workload": "txn"},
        semantics="at-least-once",
        history={"valid": not counts.get("aborted_read"), "counts": counts,
                 "examples": {"aborted_read": [{"id": "T000007-1", "txn": "T000007"}]}
                 if counts.get("aborted_read") else {}}))
    write_report(run_dir)
    return (run_dir / "report.html").read_text()


def test_transactions_section_shows_outcomes_and_marks_anomalies(tmp_path):
    page = _report(tmp_path / "txn", {"txns_committed": 86, "txns_aborted": 30,
                                      "txns_info": 1, "aborted_read": 2})
    section = page[page.index("<h2>Transactions</h2>"):page.index("<h2>Phases</h2>")
                   if "<h2>Phases</h2>" in page else None]
    text = re.sub(r"<[^>]+>", " ", section)
    assert "committed  86" in text and "aborted  30" in text and "indeterminate  1" in text
    assert '<th>aborted_read</th><td class="num bad">2</td>' in section
    assert '<th>torn_transaction</th><td class="num">0</td>' in section
    assert "aborted_read (checker examples)" in page and "T000007-1" in page


def test_version_1_report_has_no_transactions_section(tmp_path):
    page = _report(tmp_path / "v1", {"lost": 0})
    assert "<h2>Transactions</h2>" not in page


def test_cycles_are_listed_and_only_the_forbidden_one_is_red(tmp_path):
    page = _report(tmp_path / "cycles", {"txns_committed": 10, "write_cycle": 3,
                                         "read_cycle": 1, "mixed_cycle": 0})
    section = page[page.index("<h2>Transactions</h2>"):]
    assert '<th>write_cycle</th><td class="num">3</td>' in section
    assert '<th>read_cycle</th><td class="num bad">1</td>' in section
    assert '<th>mixed_cycle</th><td class="num">0</td>' in section
