"""Pure logic of the distribution module: version pick from Maven metadata, pom text,
logging binding choice. No Maven, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.cluster.kafka import distribution as dist
from pytest_kreplica.cluster.kafka import maven
from pytest_kreplica.errors import EnvironmentProblem

METADATA = """<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>org.apache.kafka</groupId>
  <artifactId>{artifact}</artifactId>
  <versioning>
    <latest>{latest}</latest>
    <versions>
{versions}
    </versions>
  </versioning>
</metadata>
"""


def metadata(artifact: str, versions: list[str]) -> str:
    body = "\n".join(f"      <version>{v}</version>" for v in versions)
    return METADATA.format(artifact=artifact, latest=versions[-1], versions=body)


def test_versions_from_metadata_drops_prereleases_and_sorts_numerically():
    text = metadata("kafka_2.13", ["3.9.2", "4.10.0", "4.3.1", "4.0.0-rc1", "4.9.0"])
    assert dist.versions_from_metadata(text) == ["3.9.2", "4.3.1", "4.9.0", "4.10.0"]


def test_default_is_newest_version_every_artifact_has():
    # 4.4.0 published only for the core artifact: the pick must stop at 4.3.1
    available = {
        "kafka_2.13": ["3.9.2", "4.2.2", "4.3.0", "4.3.1", "4.4.0"],
        "kafka-tools": ["3.9.2", "4.3.0", "4.3.1"],
        "connect-mirror": ["3.9.2", "4.3.0", "4.3.1"],
    }
    assert dist.pick_default_version(available) == "4.3.1"


def test_default_pick_without_common_version_is_environment_problem():
    with pytest.raises(EnvironmentProblem, match="no Kafka version is published"):
        dist.pick_default_version({"kafka_2.13": ["4.4.0"], "kafka-tools": ["4.3.1"],
                                   "connect-mirror": []})


def test_cached_metadata_is_read_from_every_repository_file(tmp_path, monkeypatch):
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path))
    folder = tmp_path / "m2" / "org" / "apache" / "kafka" / "kafka-tools"
    folder.mkdir(parents=True)
    (folder / "maven-metadata-central.xml").write_text(metadata("kafka-tools", ["4.3.0"]))
    (folder / "maven-metadata-mirror.xml").write_text(metadata("kafka-tools", ["4.3.1"]))
    assert dist._cached_artifact_versions("kafka-tools") == ["4.3.0", "4.3.1"]


@pytest.mark.parametrize("version, expected", [
    ("3.9.2", ["org.apache.kafka:kafka_2.13:3.9.2", dist.SLF4J_RELOAD4J]),
    ("4.3.1", ["org.apache.kafka:kafka_2.13:4.3.1"]),
])
def test_first_pass_coordinates(version, expected):
    assert dist._component_coordinates(version, "broker", None) == expected


def test_4x_binding_follows_log4j_version_kafka_brings():
    jars = [Path("kafka_2.13-4.3.1.jar"), Path("log4j-api-2.25.4.jar"),
            Path("slf4j-api-1.7.36.jar")]
    coords = dist._component_coordinates("4.3.1", "tools", jars)
    assert coords == ["org.apache.kafka:kafka-tools:4.3.1",
                      "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"]


def test_pom_lists_dependencies_in_order():
    pom = maven.pom("4.3.1", ["org.apache.kafka:kafka_2.13:4.3.1", "org.slf4j:x:1"])
    assert "<packaging>pom</packaging>" in pom
    assert pom.index("kafka_2.13") < pom.index("<artifactId>x</artifactId>")
    assert "<artifactId>kafka-4-3-1</artifactId>" in pom


def test_bad_version_string_is_input_error():
    from pytest_kreplica.errors import InputError

    with pytest.raises(InputError, match="not a release number"):
        dist._check_version("4.x")


def test_logging_flags_per_major_version(tmp_path):
    new = dist.Distribution("4.3.1", "java", tmp_path, {"broker": "a.jar"})
    old = dist.Distribution("3.9.2", "java", tmp_path, {"broker": "a.jar"})
    assert new.logging_flags()[0].startswith("-Dlog4j2.configurationFile=")
    assert old.logging_flags()[0].startswith("-Dlog4j.configuration=file:")
    assert Path(new.logging_flags()[0].split("=", 1)[1]).exists()
    assert Path(old.logging_flags()[0].split("file:", 1)[1]).exists()


def test_archive_flag_only_when_archive_exists(tmp_path):
    d = dist.Distribution("4.3.1", "java", tmp_path, {"broker": "a.jar"})
    assert not any("SharedArchiveFile" in f for f in d.jvm_flags())
    d.archive_path.parent.mkdir(parents=True)
    d.archive_path.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={d.archive_path}" in d.jvm_flags()
    assert not any("SharedArchiveFile" in f for f in d.jvm_flags(archive=False))


def test_missing_java_names_the_remedy(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    maven.find_java.cache_clear()
    try:
        with pytest.raises(EnvironmentProblem, match="Java 17 or newer not found.*JAVA_HOME"):
            maven.find_java()
    finally:
        maven.find_java.cache_clear()


def test_old_java_is_rejected(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    maven.find_java.cache_clear()
    try:
        with pytest.raises(EnvironmentProblem, match="Java 11; Kafka needs Java 17"):
            maven.find_java()
    finally:
        maven.find_java.cache_clear()


def test_missing_maven_names_the_remedy(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem, match="Maven \\(mvn\\) not found"):
        maven.find_maven()


def test_maven_failure_classification():
    down = maven.MavenFailed("[ERROR] Failed to execute goal ... Could not transfer artifact "
                            "x from/to central: repo.maven.apache.org: Name or service not known")
    assert down.unreachable()
    problem = maven.problem(down, "Kafka 4.3.1")
    assert "check the network" in str(problem) and "\n" not in str(problem)
    missing = maven.MavenFailed("[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:9")
    assert not missing.unreachable()


def _fake_maven(tmp_path: Path, monkeypatch, script: str) -> Path:
    """A ``mvn`` on PATH that runs ``script`` (sh) and logs each call to ``calls.log``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!/bin/sh\nLOG={log}\n{script}\n")
    mvn.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(maven, "find_java", lambda: "/usr/bin/java")
    monkeypatch.setattr(maven, "wait_exponential", lambda **_: (lambda state: 0.0))
    return log


def test_online_maven_run_that_could_not_download_is_tried_again(tmp_path, monkeypatch):
    log = _fake_maven(tmp_path, monkeypatch, """echo call >> $LOG
if [ $(wc -l < $LOG) -lt 3 ]; then
  echo '[ERROR] Plugin x or one of its dependencies could not be resolved: Could not transfer'
  exit 1
fi""")
    said: list[str] = []
    monkeypatch.setattr(maven.once, "say", said.append)
    maven.run_maven(["validate"], cwd=tmp_path, offline=False)
    assert log.read_text().count("call") == 3
    assert len(said) == 2 and all("attempt" in s and "of 3" in s for s in said)


def test_maven_retries_are_bounded_and_skip_what_a_retry_cannot_fix(tmp_path, monkeypatch):
    log = _fake_maven(tmp_path, monkeypatch, "echo call >> $LOG\n"
                      "echo '[ERROR] Could not transfer artifact: Connection refused'; exit 1")
    monkeypatch.setattr(maven.once, "say", lambda line: None)
    with pytest.raises(maven.MavenFailed):
        maven.run_maven(["validate"], cwd=tmp_path, offline=False)
    assert log.read_text().count("call") == maven.ONLINE_ATTEMPTS
    log.write_text("")
    _fake_maven(tmp_path, monkeypatch, "echo call >> $LOG\n"
                "echo '[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:9'; exit 1")
    with pytest.raises(maven.MavenFailed):
        maven.run_maven(["validate"], cwd=tmp_path, offline=False)
    assert log.read_text().count("call") == 1  # a missing artifact stays missing
    log.write_text("")
    _fake_maven(tmp_path, monkeypatch, "echo call >> $LOG\n"
                "echo '[ERROR] offline mode: Could not transfer'; exit 1")
    with pytest.raises(maven.MavenFailed):
        maven.run_maven(["validate"], cwd=tmp_path, offline=True)
    assert log.read_text().count("call") == 1  # offline is a probe of the cache, not a download


def test_empty_local_repository_fetches_the_plugin_before_asking_in_parallel(tmp_path,
                                                                             monkeypatch):
    """Maven 3.8 does not lock its local repository: the first version query runs alone
    while the plugin is missing, the others after it (they may overlap each other)."""
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    log = _fake_maven(tmp_path, monkeypatch, """for a in "$@"; do case $a in
  -Dartifact=*) art=$(echo $a | cut -d: -f2);; esac; done
echo "start $art" >> $LOG; sleep 0.3; echo "end $art" >> $LOG
meta=$KREPLICA_CACHE/m2/org/apache/kafka/$art; mkdir -p $meta
echo "<metadata><versioning><versions><version>4.3.1</version></versions></versioning>\
</metadata>" > $meta/maven-metadata-central.xml""")
    assert not maven.plugin_in_local_repository()
    assert dist.available_versions(refresh=True) == {a: ["4.3.1"] for a in dist.REQUIRED_ARTIFACTS}
    lines = log.read_text().split()
    first = dist.REQUIRED_ARTIFACTS[0]
    assert lines[:4] == ["start", first, "end", first]
    assert set(lines[5::2]) == set(dist.REQUIRED_ARTIFACTS[1:]) and len(lines) == 12
    # with the plugin in place, all three are asked at once
    group, artifact, version = maven.DEPENDENCY_PLUGIN.split(":")
    jar = (tmp_path / "cache" / "m2" / Path(*group.split(".")) / artifact / version
           / f"{artifact}-{version}.jar")
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"jar")
    log.write_text("")
    dist.available_versions(refresh=True)
    assert log.read_text().split()[:6:2] == ["start"] * 3
