"""Matrix loading, expansion, ids, markers and every one-line error (pure logic)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import (
    DIMENSIONS,
    load_all,
    load_matrix,
    resolve_matrices,
    static_markers,
)

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def ids(path: Path, **defaults) -> list[str]:
    return [c.case_id for c in load_matrix(path, defaults).cases]


def test_product_exclude_include_in_declared_order(tmp_path):
    path = write(tmp_path, """
        scenario: replication
        dimensions:
          partitions: [1, 5]
          compression: [none, gzip]
          producer_mode: [sync, async]
        exclude: [{compression: gzip, producer_mode: sync}]
        include: [{partitions: 10, compression: zstd}]
    """)
    assert ids(path) == [
        "m-p1-none-sync", "m-p1-none-async", "m-p1-gzip-async",
        "m-p5-none-sync", "m-p5-none-async", "m-p5-gzip-async",
        "m-p10-zstd-sync",  # include: unnamed dimensions take the first listed value
    ]


def test_ids_name_only_varying_dimensions_and_issue_example(tmp_path):
    path = write(tmp_path, """
        dimensions:
          partitions: [5, 1]
          replication_factor: [3, 1]
          segment_bytes: [1K]
          compression: [gzip]
          acks: [-1]
          producer_mode: [sync]
        exclude: [{partitions: 1, replication_factor: 1}]
        include: [{partitions: 5, replication_factor: 3, segment_bytes: 2K, acks: 1}]
    """)
    assert ids(path) == ["m-p5-rf3-seg1k-acks-1", "m-p5-rf1-seg1k-acks-1",
                         "m-p1-rf3-seg1k-acks-1", "m-p5-rf3-seg2k-acks1"]


def test_values_are_normalised_and_duplicates_collapse(tmp_path):
    path = write(tmp_path, """
        dimensions:
          acks: [all, -1, "1"]
          segment_bytes: [10K, 10240, 1M]
        include: [{acks: -1, segment_bytes: 10K}]
    """)
    matrix = load_matrix(path)
    assert [(c.acks, c.segment_bytes) for c in matrix.cases] == [
        (-1, 10240), (-1, 1048576), (1, 10240), (1, 1048576)]


def test_defaults_and_derived_values(tmp_path):
    path = write(tmp_path, """
        dimensions:
          replication_factor: [5]
          idempotence: [false, true]
    """)
    plain, idem = load_matrix(path, {"kafka_version": "3.9.2"}).cases
    assert plain.brokers == 5 and plain.partitions == 1 and plain.kafka_version == "3.9.2"
    assert plain.semantics == "at-least-once" and idem.semantics == "exactly-once"
    assert plain.seed != idem.seed
    assert load_matrix(path).cases[0].seed == plain.seed  # stable: derived from the id
    assert "kafka_3_9" in plain.markers and "kafka_3_x" in plain.markers


def test_failure_dimensions_collapse_without_faults(tmp_path):
    path = write(tmp_path, """
        dimensions:
          failure: [none, hard]
          target: [leader, follower]
          downtime: [2]
    """)
    cases = load_matrix(path).cases
    assert [c.case_id for c in cases] == ["m-nofail", "m-hard-leader-down2s",
                                          "m-hard-follower-down2s"]
    assert cases[0].downtime == DIMENSIONS["downtime"].default
    assert "target_leader" not in cases[0].markers
    assert {"failure_hard", "target_follower"} <= set(cases[2].markers)
    assert cases[2].semantics == "at-least-once"


def test_markers(tmp_path):
    path = write(tmp_path, """
        markers: [ci, nightly]
        dimensions:
          compression: [gzip]
          acks: [all, 1]
          producer_mode: [async]
          failure: [soft]
          target: [mirror-maker]
        scenario: mirror
    """, name="leader-failure.yaml")
    first, second = load_matrix(path).cases
    assert first.markers[:4] == ("kreplica", "leader_failure", "ci", "nightly")
    assert {"compression_gzip", "acks_all", "producer_async", "failure_soft",
            "target_mirror_maker", "backend_process", "kafka_4_x"} <= set(first.markers)
    assert "acks_1" in second.markers
    assert first.case_id.startswith("leader-failure-")


def test_every_value_marker_is_registered_up_front(tmp_path):
    registered = static_markers()
    path = write(tmp_path, """
        dimensions:
          compression: [none, gzip, snappy, lz4, zstd]
          acks: [-1, 0, 1]
          producer_mode: [sync, async]
          backend: [process, docker]
          kafka_version: [default, 3.9.2]
          failure: [clean, hard, soft, partition]
          target: [leader, follower, controller]
        exclude: [{backend: process, failure: partition}]
    """)
    for case in load_matrix(path).cases:
        unknown = [m for m in case.markers if m not in registered]
        assert unknown == ["m"]  # the matrix name is registered when the matrix is loaded


def test_pairwise_covers_every_pair_with_fewer_cases(tmp_path):
    path = write(tmp_path, """
        strategy: pairwise
        dimensions:
          partitions: [1, 5, 10]
          compression: [none, gzip, snappy, lz4]
          acks: [-1, 1]
          producer_mode: [sync, async]
        exclude: [{compression: snappy, acks: 1}]
    """)
    cases = load_matrix(path).cases
    assert len(cases) < 3 * 4 * 2 * 2
    assert not any(c.compression == "snappy" and c.acks == 1 for c in cases)
    dims = ["partitions", "compression", "acks", "producer_mode"]
    seen = {(a, getattr(c, a), b, getattr(c, b)) for c in cases for a in dims for b in dims}
    for a in dims:
        for b in dims:
            for va in {getattr(c, a) for c in cases}:
                for vb in {getattr(c, b) for c in cases}:
                    if a != b and {(a, va), (b, vb)} != {("compression", "snappy"), ("acks", 1)}:
                        assert (a, va, b, vb) in seen


def test_expansion_is_deterministic(tmp_path):
    path = write(tmp_path, """
        strategy: pairwise
        dimensions:
          partitions: [1, 5, 10]
          compression: [none, gzip, snappy]
          acks: [-1, 1]
    """)
    assert ids(path) == ids(path)


def test_shipped_matrices_load():
    paths = resolve_matrices([], REPO / "matrices")
    names = [p.stem for p in paths]
    assert "smoke" in names and "basic" in names
    matrices = {m.name: m for m in load_all(paths)}
    assert 4 <= len(matrices["smoke"].cases) <= 6
    # the main command runs smoke; the test command must not run it again
    assert not any("ci" in c.markers for c in matrices["smoke"].cases)
    assert len(matrices["basic"].cases) <= 30


@pytest.mark.parametrize(("text", "expected"), [
    ("dimensions: {partitions: [1]}\ncolour: red\n",
     "m.yaml: colour: unknown key; allowed: description, scenario, markers, strategy, "
     "dimensions, exclude, include"),
    ("dimensions: {partition: [1]}\n",
     "m.yaml: dimensions.partition: unknown dimension; allowed: partitions, replication_factor"),
    ("dimensions: {compression: [gzip, brotli]}\n",
     "m.yaml: dimensions.compression: bad value 'brotli'; allowed: none | gzip | snappy | lz4 "
     "| zstd"),
    ("dimensions: {acks: [2]}\n",
     "m.yaml: dimensions.acks: bad value 2; allowed: -1 | all | 1 | 0"),
    ("dimensions: {partitions: [0]}\n",
     "m.yaml: dimensions.partitions: bad value 0; allowed: an integer >= 1"),
    ("dimensions: {segment_bytes: [1G]}\n",
     "m.yaml: dimensions.segment_bytes: bad value '1G'; allowed: default | an integer"),
    ("dimensions: {kafka_version: [latest]}\n",
     "m.yaml: dimensions.kafka_version: bad value 'latest'; allowed: default | a version"),
    ("dimensions: {idempotence: [yes please]}\n",
     "m.yaml: dimensions.idempotence: bad value 'yes please'; allowed: true | false"),
    ("dimensions: {partitions: []}\n",
     "m.yaml: dimensions.partitions: empty list; allowed: one or more values"),
    ("dimensions: {replication_factor: [3, 4], brokers: [3]}\n",
     "m.yaml: case m-rf4.replication_factor: 4 is above brokers 3; allowed: 1..brokers"),
    ("dimensions: {replication_factor: [2], min_insync_replicas: [3]}\n",
     "m.yaml: case m-default.min_insync_replicas: 3 is above replication_factor 2; "
     "allowed: 1..replication_factor"),
    ("dimensions: {replication_factor: [1], failure: [hard], target: [follower]}\n",
     "m.yaml: case m-default.target: follower needs replication_factor >= 2"),
    ("dimensions: {idempotence: [true], acks: [1]}\n",
     "m.yaml: case m-default.idempotence: true needs acks -1 (all), got acks 1"),
    ("strategy: random\n", "m.yaml: strategy: bad value 'random'; allowed: product | pairwise"),
    ("scenario: Replication!\n", "m.yaml: scenario: unknown scenario 'Replication!'"),
    ("markers: [ci, 'not ok']\n", "m.yaml: markers: bad value"),
    ("exclude: [{colour: red}]\n", "m.yaml: exclude[0].colour: unknown dimension"),
    ("include: [{acks: 7}]\n", "m.yaml: include[0].acks: bad value 7; allowed: -1 | all"),
    ("exclude: {acks: 1}\n", "m.yaml: exclude: must be a list of non-empty mappings"),
    ("dimensions: {acks: [1]}\nexclude: [{acks: 1}]\n",
     "m.yaml: exclude: excludes every case; allowed: at least one case left"),
    ("- just\n- a list\n", "m.yaml: top level: must be a mapping; allowed keys: description"),
    ("dimensions: {partitions: [1, 2\n", "m.yaml: line 2: YAML syntax error:"),
    # issue 12 item 4: input that changed a case's meaning without a word
    ("dimensions:\n  acks: [1]\n  partitions: [1]\n  acks: [-1]\n",
     "m.yaml: line 4: key 'acks' appears twice in one mapping"),
    ("include:\n  - {failure: hard, failure: none}\n",
     "m.yaml: line 2: key 'failure' appears twice"),
    ("dimensions: {acks: [-1], failure: [hard], semantics: [at-most-once]}\n",
     "m.yaml: case m-default.semantics: at-most-once is weaker than the at-least-once"),
    ("dimensions: {idempotence: [true], semantics: [at-least-once]}\n",
     "m.yaml: case m-default.semantics: at-least-once is weaker than the exactly-once"),
    ("scenario: upgrade\n", "m.yaml: scenario: unknown scenario 'upgrade' (no test runs it)"),
])
def test_errors_are_one_line_naming_file_key_and_allowed(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / expected.split(": ", 1)[0]) + ": ")
    assert message.split("/")[-1].startswith(expected), message


def test_non_utf8_matrix_is_one_line(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_bytes(b"description: caf\xe9\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert str(info.value) == (f"{path}: line 1: not UTF-8 (byte 0xe9 at offset 16); "
                               "allowed: a UTF-8 YAML file")


def test_missing_matrices_dir_is_an_error(tmp_path):
    with pytest.raises(MatrixError, match="kreplica_matrices_dir: no such directory"):
        resolve_matrices([], tmp_path / "nowhere")


def test_selectors_resolve_names_and_paths(tmp_path, monkeypatch):
    (tmp_path / "matrices").mkdir()
    a = write(tmp_path / "matrices", "{}", "a.yaml")
    b = write(tmp_path / "matrices", "{}", "b.yaml")
    other = write(tmp_path, "{}", "other.yaml")
    monkeypatch.chdir(tmp_path)
    assert resolve_matrices([], tmp_path / "matrices") == [a, b]
    assert resolve_matrices(["b", "other.yaml", "b"], tmp_path / "matrices") == [b, other]
    with pytest.raises(MatrixError, match=r"no such matrix file; allowed: .* \(a, b, basic, "):
        resolve_matrices(["c"], tmp_path / "matrices")


def test_same_matrix_name_twice_is_an_error(tmp_path):
    (tmp_path / "x").mkdir()
    first = write(tmp_path, "{}", "a.yaml")
    second = write(tmp_path / "x", "{}", "a.yaml")
    with pytest.raises(MatrixError, match="matrix name 'a' is also used by"):
        load_all([first, second])
