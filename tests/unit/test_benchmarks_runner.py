"""``python -m benchmarks`` (benchmarks/run_all.py): each figure is read off its script's real
output format, and the page's table is replaced, with the rows of figures not run kept as
they were. Pure logic: no benchmark runs here and no time is asserted."""

from __future__ import annotations

import pytest

from benchmarks import run_all

PLUGIN_IMPORT = """\
import                median ms   min ms  modules  heavy
pytest_kreplica             0.6      0.5        1  -
plugin                     80.1     70.0       20  -
plugin+configure          900.4    850.0      101  -
pytest                    453.0    440.0
"""

CLUSTER = """\
Kafka 4.3.1, 2 cores, load 3.0

cold start to ready, class-data archive      median   3.38 s  (3.27-3.48, n=2)
cold start to ready, no archive (baseline)   median   5.42 s  (4.80-5.79, n=2)
archive speed-up                             x1.60
teardown close() of 3 nodes                  median   5.52 s  (5.43-5.62, n=4)
failover leader SIGKILL -> new leader, tuned median   4.05 s  (3.46-4.27, n=2)
failover, Kafka defaults (baseline)          median  11.70 s  (7.8-13.6, n=2)
tuned speed-up                               x2.89
(load 3.1 at the end)
"""

CHECKER = """\
| N sends + N polls | checker | median s | runs | peak MiB | vs python |
| --- | --- | --- | --- | --- | --- |
| 1,000,000 | python-parquet | 22.6 | 1 | 1600 |  |
| 1,000,000 | spark-parquet | 30.1 | 1 | 900 | 1.33 |
"""

SPARK_CONNECT = """\
first connect check (starts the server if none is warm): 12.4 s
kreplica check --spark-master connect        median   2.15 s  runs 2.77 2.15 2.34
kreplica check connect, own session          median   2.60 s  runs 2.70 2.60 2.50
kreplica check (no option)                   median   2.09 s  runs 2.13 2.09 2.37
kreplica check --spark-master local[2]       median   9.31 s  runs 9.31 10.11 9.63
"""

VERIFY_LOGS = """\
set        GiB   batches   sha256sum MB/s  verify-logs MB/s  ratio   per CPU-second: ...
mixed      0.25      30000             229               388   1.70                 229  ...
"""

SMOKE = """\
median over 3 runs (s):
  gate          0.08
  produce       0.19
  overhead      1.20
  total         1.39
"""


def test_each_parser_reads_its_scripts_output():
    (plugin,) = run_all.parse_plugin_import(PLUGIN_IMPORT)
    assert (plugin.result, plugin.baseline, plugin.ratio) == (
        "900 ms, 101 modules, none of the heavy libraries", "`import pytest` 453 ms", "1.99")
    start, failover = run_all.parse_cluster(CLUSTER)
    assert (start.result, start.ratio) == ("3.38 s", "0.62")
    assert (failover.result, failover.ratio) == ("4.05 s", "0.35")
    (check,) = run_all.parse_checker(CHECKER)
    assert check.result == "30.1 s, 900 MiB peak" and check.ratio == "1.33"
    (connect,) = run_all.parse_spark_connect(SPARK_CONNECT)
    assert (connect.result, connect.ratio) == ("2.09 s", "0.22")
    (verify,) = run_all.parse_verify_logs(VERIFY_LOGS)
    assert (verify.result, verify.ratio) == ("388 MB/s", "1.69")
    (smoke,) = run_all.parse_smoke_overhead(SMOKE)
    assert (smoke.result, smoke.ratio) == ("1.20 s", "0.86")


def test_a_missing_figure_is_an_error_not_a_row():
    with pytest.raises(run_all.NoFigure):
        run_all.parse_cluster("Kafka 4.3.1\n(nothing measured)\n")
    assert run_all.parse_cluster(CLUSTER.split("failover, Kafka")[0])[0].figure.startswith("3-node")


def test_every_figure_has_a_distinct_name_and_command():
    assert len({f.name for f in run_all.FIGURES}) == len(run_all.FIGURES)
    assert len({f.command for f in run_all.FIGURES}) == len(run_all.FIGURES)


def test_only_replaces_the_rows_it_ran(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nWhat the scripts are.\n")
    monkeypatch.setattr(run_all, "PAGE", page)
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    calls = []

    def fake_measure(figure, date):
        calls.append(figure.name)
        return [[f"{figure.name} figure", f"`{figure.command}`", f"{len(calls)} s", "b", "0.5",
                 date, "2", "1.0 → 1.0"]]

    monkeypatch.setattr(run_all, "measure", fake_measure)
    assert run_all.main([]) == 0
    first = run_all.read_table(page.read_text())
    default = [f for f in run_all.FIGURES if f.default]
    assert len(first) == len(default) and "flakes" not in calls  # hours: never by default
    assert run_all.main(["--only", "cluster"]) == 0
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nWhat the scripts are.\n\n## Figures\n")
    assert text.count(run_all.BEGIN) == 1
    second = run_all.read_table(text)
    cluster = next(f for f in run_all.FIGURES if f.name == "cluster")
    for figure in default:
        key = f"`{figure.command}`"
        if figure is cluster:
            assert second[key] != first[key]
        else:
            assert second[key] == first[key]


def test_a_failing_script_keeps_the_earlier_row(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n")
    monkeypatch.setattr(run_all, "PAGE", page)
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    monkeypatch.setattr(run_all, "measure", lambda figure, date: [
        [figure.name, f"`{figure.command}`", "1 s", "b", "0.5", date, "2", "1 → 1"]])
    run_all.main(["--only", "checker"])
    before = run_all.read_table(page.read_text())

    def broken(figure, date):
        raise run_all.NoFigure("exit 1")

    monkeypatch.setattr(run_all, "measure", broken)
    assert run_all.main(["--only", "checker"]) == 1
    assert run_all.read_table(page.read_text()) == before


FLAKES = """\
load own: 5 run(s)
flakes own: 5 runs, 37 tests, 1 flaky, 2 harness errors, 2 errors, 0 failures, 15 xfailed
wall own: median 900 s per pytest run
flakes hog: 5 runs, 37 tests, 3 flaky, 4 harness errors, 5 errors, 1 failures, 15 xfailed
"""


def test_the_flakes_figure_runs_only_when_named_and_reads_both_loads(tmp_path, monkeypatch):
    own, hog = run_all.parse_flakes(FLAKES)
    assert own.result == "1 flaky of 37 tests, 2 harness errors, 2 errors, 0 failures (5 runs)"
    assert hog.figure.endswith("under a CPU hog per core") and hog.ratio == "3.00"
    assert hog.baseline.startswith("1 flaky of 37 tests") and own.baseline == "—"
    monkeypatch.setattr(run_all, "PAGE", tmp_path / "benchmarks.md")
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    calls = []
    monkeypatch.setattr(run_all, "measure", lambda figure, date: calls.append(figure.name) or [])
    assert run_all.main(["--only", "flakes"]) == 0 and calls == ["flakes"]


SHAPE = """\
shape 1000x10 rf 3 on 8 brokers (30000 replicas, 3750 per broker), heap 512 MB
  start_s              7.91   baseline       7.87
  create_s            77.29   baseline       2.62
  healthy_s            3.87   baseline       0.22
  max_heap_mb        182.20   baseline      79.45
  max_rss_mb         545.46   baseline     281.06
  max_fds           3924.00   baseline     180.00
  max_mmaps         7922.00   baseline     431.00
  max_threads         86.00   baseline      86.00
  idle_cores           1.12   baseline       0.41
  close_s             18.76   baseline       6.53
"""


def test_the_shape_figure_reads_heap_memory_and_idle_cores_beside_the_small_shape():
    heap, idle = run_all.parse_shape(SHAPE)
    assert "3,750 replicas a broker, heap 512 MB" in heap.figure
    assert heap.result.startswith("182 MB live, 545 MB resident; 3924 open files")
    assert heap.ratio == "2.29" and "79 MB live" in heap.baseline
    assert (idle.result, idle.ratio) == ("1.12 cores", "2.73")
    assert not next(f for f in run_all.FIGURES if f.name == "shape").default
    with pytest.raises(run_all.NoFigure):
        run_all.parse_shape(SHAPE.replace("idle_cores", "idle"))


SOAK = """\
soak 7200 s: exit 0, wall 8012 s, peak 8.4 GiB
soak verdict: passed (every part passed); sent 60000, acked 58000, indeterminate 2000, \
polled 59500, lost 0, unseen 0, duplicated 300, other anomalies none, faults 70, checks \
90/90 ok, election max 4.2 s, case 7950 s
  soak history check run 1: 30.1 s peak 1500 MiB
soak history: check 30.0 s (1500 MiB), read 16.0 s (900 MiB), count 12.0 s, ratio 1.88
"""


def test_the_soak_figure_reads_the_verdict_and_the_check_beside_the_plain_read():
    soak, check = run_all.parse_soak(SOAK)
    assert soak.figure.startswith("a 120-minute soak at the plan's production shape")
    assert soak.result.startswith("passed (every part passed); sent 60000, acked 58000")
    assert soak.result.endswith("; wall 134 min, peak 8.4 GiB") and soak.ratio == "—"
    assert (check.result, check.ratio) == ("30.0 s, 1500 MiB peak", "1.88")
    assert check.baseline.startswith("16.0 s, 900 MiB peak: a plain Spark read")
    assert not any(f.default for f in run_all.FIGURES if f.name.startswith("soak"))
    with pytest.raises(run_all.NoFigure):
        run_all.parse_soak(SOAK.replace("soak history:", "soak history"))
