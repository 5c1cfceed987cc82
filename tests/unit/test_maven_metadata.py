"""The version pick by one HTTP GET per artifact (a local HTTP server stands in for the
repository), the mirror read from settings.xml, and Maven's own fetch when a proxy is set."""

from __future__ import annotations

import http.server
import threading
from functools import partial

import pytest

from pytest_kreplica import distribution, maven_metadata

META = """<?xml version="1.0"?><metadata><groupId>org.apache.kafka</groupId>
<artifactId>{a}</artifactId><versioning><versions>
<version>3.9.2</version><version>4.3.1</version><version>4.4.0-rc1</version>{extra}
</versions></versioning></metadata>"""


@pytest.fixture
def repository(tmp_path):
    root = tmp_path / "repo"
    for artifact in distribution.REQUIRED_ARTIFACTS:
        folder = root / "org" / "apache" / "kafka" / artifact
        folder.mkdir(parents=True)
        extra = "<version>4.4.0</version>" if artifact == "kafka_2.13" else ""
        (folder / "maven-metadata.xml").write_text(META.format(a=artifact, extra=extra))
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _settings(home, body: str) -> None:
    (home / ".m2").mkdir(parents=True, exist_ok=True)
    (home / ".m2" / "settings.xml").write_text(
        f'<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">{body}</settings>')


def test_repository_url_from_settings(tmp_path):
    assert maven_metadata.repository_url(tmp_path / "none.xml") == maven_metadata.CENTRAL
    _settings(tmp_path, "<mirrors><mirror><id>m</id><mirrorOf>central</mirrorOf>"
                        "<url>https://mirror.example/maven2/</url></mirror></mirrors>")
    settings = tmp_path / ".m2" / "settings.xml"
    assert maven_metadata.repository_url(settings) == "https://mirror.example/maven2"
    _settings(tmp_path, "<proxies><proxy><host>p</host></proxy></proxies>")
    assert maven_metadata.repository_url(settings) is None
    settings.write_text("<settings>")
    assert maven_metadata.repository_url(settings) is None


def test_default_version_by_http_without_maven(tmp_path, monkeypatch, repository):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    _settings(tmp_path, f"<mirrors><mirror><id>m</id><mirrorOf>*</mirrorOf>"
                        f"<url>{repository}</url></mirror></mirrors>")

    def no_maven(*args, **kwargs):
        raise AssertionError("Maven was run for the metadata")

    monkeypatch.setattr(distribution, "_run_maven", no_maven)
    assert distribution.default_version(refresh=True) == "4.3.1"  # common to all three
    assert "4.4.0" in distribution.available_versions(refresh=False)["kafka_2.13"]


def test_maven_fetches_when_http_cannot(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    _settings(tmp_path, "<proxies><proxy><host>p</host></proxy></proxies>")
    ran = []
    monkeypatch.setattr(distribution, "_run_maven", lambda args, cwd, offline: ran.append(args))
    distribution.available_versions(refresh=True)
    assert len(ran) == len(distribution.REQUIRED_ARTIFACTS)
