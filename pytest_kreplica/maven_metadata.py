"""A Maven repository's ``maven-metadata.xml`` by one HTTP GET, when that is how Maven itself
would reach it (Maven Central, or a plain mirror of it in ``~/.m2/settings.xml``): a Maven JVM
per artifact took 32 s of a first run on a loaded machine. With a proxy or unreadable
settings it answers None and the caller lets Maven fetch."""

from __future__ import annotations

import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

CENTRAL = "https://repo.maven.apache.org/maven2"
TIMEOUT_S = 15.0


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def repository_url(settings: Path | None = None) -> str | None:
    """Maven Central, or its mirror in ``settings`` (default ``~/.m2/settings.xml``); None
    when the settings name a proxy or cannot be read."""
    settings = settings or Path.home() / ".m2" / "settings.xml"
    if not settings.exists():
        return CENTRAL
    try:
        root = ET.parse(settings).getroot()
    except (ET.ParseError, OSError):
        return None
    if any(_local(el.tag) == "proxy" for el in root.iter()):
        return None
    for mirror in (el for el in root.iter() if _local(el.tag) == "mirror"):
        fields = {_local(child.tag): (child.text or "").strip() for child in mirror}
        targets = {t.strip() for t in fields.get("mirrorOf", "").split(",")}
        if fields.get("url") and {"*", "central"} & targets:
            return fields["url"].rstrip("/")
    return CENTRAL


def fetch(group: str, artifact: str, url: str | None = None) -> str | None:
    """The text of ``group:artifact``'s metadata, or None on any problem."""
    url = url or repository_url()
    if url is None:
        return None
    address = f"{url}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(address, timeout=TIMEOUT_S) as response:
            return response.read().decode("utf-8")
    except (OSError, ValueError, UnicodeDecodeError):
        return None
