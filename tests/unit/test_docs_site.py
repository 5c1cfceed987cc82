"""The docs as a product: the MkDocs site builds with ``--strict`` (so a broken link, a missing
page or a missing anchor fails CI), its API reference lists exactly the public names, the
README's links resolve to real pages and headings, the README stays about a page, and no user
page reads like a work diary (dates, sessions, issue numbers, whose load the machine carried).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

import pytest_kreplica

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_LIMIT = 25 * 1024

# A development diary in user docs: what happened when, not what the product does.
# "session" alone is a product word (a pytest session, a broker's session timeout), so only
# numbered or narrated sessions count.
DIARY = [
    (r"\b20\d\d-[01]\d-[0-3]\d\b", "a date"),
    (r"\bissues? #?\d+", "an issue number"),
    (r"\bsessions? \d+", "a numbered session"),
    (r"\b(this|an earlier|a later|the previous|earlier|later|first|second|third|fourth|fifth"
     r"|sixth|seventh|eighth|ninth|tenth) session\b",
     "a narrated session"),
    (r"\bstops? \d+", "a numbered stop"),
    (r"\bothers'? load\b", "others' load"),
    (r"\bother engineers\b|\bseveral engineers\b|\bfour engineers\b|\bengineers' clusters\b",
     "engineers at work"),
    (r"\bnot kept\b", "an idea not kept"),
    (r"\b(at |under )?(others'? )?load( average)? (of |about |≈ ?)?\d", "a machine's load"),
]
# the benchmarks table names each row's date and load (the changelog is not a docs page)
DATED = {"benchmarks.md"}


# not -q: mkdocs counts warnings for --strict only at the log level that shows them
def mkdocs_build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=config_dir, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_mkdocs_strict_build_passes(tmp_path):
    result = mkdocs_build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    reference = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    for name in pytest_kreplica.__all__:
        assert f'id="pytest_kreplica.{name}"' in reference, f"{name} missing from the API reference"


def copy_site(tmp_path: Path) -> Path:
    site = tmp_path / "src"
    site.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    shutil.copytree(DOCS, site / "docs")
    (site / "pytest_kreplica").symlink_to(ROOT / "pytest_kreplica")
    return site


@pytest.mark.parametrize("planted", [
    "[adding one](failures.md#no-such-heading)",
    "[the page](no-such-page.md)",
])
def test_mkdocs_strict_build_fails_on_a_broken_link(tmp_path, planted):
    site = copy_site(tmp_path)
    page = site / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\nSee {planted}.\n", encoding="utf-8")
    result = mkdocs_build(site, tmp_path / "site")
    assert result.returncode != 0, "a broken link passed mkdocs build --strict"
    target = planted.split("(")[1].rstrip(")")
    assert target.split("#")[-1] in result.stdout + result.stderr


def test_api_reference_lists_exactly_the_public_names():
    text = (DOCS / "reference.md").read_text(encoding="utf-8")
    listed = re.findall(r"^ {8}- (\w+)$", text, re.M)
    assert listed == list(pytest_kreplica.__all__)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slugify(h.strip(), "-") for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def readme_links() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]


def test_readme_links_resolve_to_pages_and_headings():
    links = readme_links()
    assert links, "the README links no page"
    for link in links:
        path, _, anchor = link.partition("#")
        target = (ROOT / path) if path else README
        assert target.exists(), f"README links {link}: no such file"
        if anchor:
            assert anchor in anchors(target), f"README links {link}: no such heading in {path}"


def test_anchor_check_sees_a_missing_heading(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n**To add a failure type** (bold, not a heading)\n\n## Real one\n")
    assert anchors(page) == {"title", "real-one"}


def test_readme_is_about_a_page():
    size = README.stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes; at most {README_LIMIT}"


def user_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def diary_lines(path: Path) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for pattern, what in DIARY:
            if re.search(pattern, line, re.I):
                if what in ("a date", "a machine's load") and path.name in DATED:
                    continue
                found.append(f"{path.name}:{number}: {what}: {line.strip()[:100]}")
    return found


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: p.name)
def test_no_diary_in_user_docs(page):
    assert diary_lines(page) == []


def test_diary_check_finds_diary_words(tmp_path):
    page = tmp_path / "x.md"
    page.write_text("## Degraded links (issue 16, part 1)\n"
                    "Measured 2026-11-26 under others' load.\n"
                    "In session 12 (stop 3) the idea was not kept, at load 23.\n"
                    "The pytest session ends.\n")
    whats = [line.split(": ")[1] for line in diary_lines(page)]
    assert whats == ["an issue number", "a date", "others' load", "a numbered session",
                     "a numbered stop", "an idea not kept", "a machine's load"]
