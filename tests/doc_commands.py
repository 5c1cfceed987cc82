"""The shell commands a page shows, run as written: each line of its ``sh``, ``bash`` and
``console`` blocks, in page order, after writing every file the page shows up to that point
(a ``yaml`` / ``python`` / ``ini`` / ``toml`` block whose first line is ``# <relative path>``).

A command passes when it exits 0 and prints no traceback. ``pytest`` runs of matrices take
minutes, so ``--collect-only -q`` is appended and at least one test must be collected.
Installs and tox runs are not repeated here: only the exact lines of ``SKIPPED`` are passed
over, each with the reason; any other install line fails, so a new one is either run or
listed here. ``RUN_DIR`` in a command is replaced by a real run directory.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

SHELL = ("sh", "bash", "console")
FILES = ("yaml", "yml", "python", "ini", "toml")
# exact command line -> why it is not run here
SKIPPED = {
    "python3 -m pip install -q tox && python3 -m tox -e smoke":
        "the whole smoke job in a tox env of its own; CI's first step runs it",
    "python3 -m pip install -q tox && python3 -m tox -e test":
        "the project's own test command, of which this test is a part",
    "python3 -m tox -e soak -- --kreplica-duration 3600": "an hour-long soak",
    "kreplica image build": "builds the docker backend's image (minutes); tests/docker builds it",
    "python3 -m venv .venv": "an install step: tests/integration/test_quickstart.py makes a venv",
    ". .venv/bin/activate": "an install step: the quick-start test runs the venv's own binaries",
    "python3 -m pip install pytest-kreplica":
        "an install from PyPI: the quick-start test installs the wheel built from this checkout",
    "python3 -m pip install build": "the dev extra has it",
    "python3 -m build --wheel": "the quick-start test builds the wheel (into a temp directory)",
    "python3 -m pip install dist/pytest_kreplica-0.1.0-py3-none-any.whl":
        "the quick-start test installs the wheel it built into a fresh venv",
}
INSTALLS = re.compile(r"\bpip install\b|\btox\b|\bvenv\b|\bactivate\b|\bpython3? -m build\b")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
COLLECTED = re.compile(r"^(\d+)(?:/\d+)? tests? collected", re.M)
TIMEOUT = 600


@dataclass(frozen=True)
class Step:
    """One thing a page shows: a file to write or a command to run (``line`` in the page)."""

    line: int
    kind: str  # "file", "run", "collect" or "skip"
    text: str
    path: str = ""  # a file's relative path
    reason: str = ""  # why a command is skipped


def command_lines(body: str, lang: str) -> list[tuple[int, str]]:
    """The commands of one shell block with their line in it (from 0): ``\\`` continuations
    joined, comments and blank lines dropped, and in a ``console`` block only the ``$ ``
    lines (the rest is output)."""
    lines, pending, start = [], "", 0
    for number, raw in enumerate(body.splitlines()):
        line = raw.strip()
        if lang == "console":
            if not line.startswith("$ ") and not pending:
                continue
            line = line.removeprefix("$ ")
        if pending:
            line = pending + " " + line
            pending = ""
        else:
            start = number
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        if line and not line.startswith("#"):
            lines.append((start, line))
    return lines


def classify(line: int, command: str) -> Step:
    if command in SKIPPED:
        return Step(line, "skip", command, reason=SKIPPED[command])
    if INSTALLS.search(command):
        raise ValueError(f"line {line}: {command!r} installs or runs tox: run it, or add it "
                         "to tests/doc_commands.SKIPPED with the reason")
    if command.startswith("pytest "):
        return Step(line, "collect", f"{command} --collect-only -q")
    return Step(line, "run", command)


def steps(text: str) -> list[Step]:
    """The files and commands of a page, in page order."""
    found = []
    for match in FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        line = text.count("\n", 0, match.start()) + 2  # the block's first line
        first = body.split("\n", 1)[0]
        if lang in FILES and re.fullmatch(r"# [\w./-]+", first):
            found.append(Step(line, "file", body, path=first[2:]))
            if first.endswith("tox.ini"):
                found += [classify(line, c) for c in tox_commands(body)]
        elif lang in SHELL:
            found += [classify(line + n, c) for n, c in command_lines(body, lang)]
    return found


def tox_commands(ini: str) -> list[str]:
    """The ``commands`` of every env of a tox.ini, without ``{posargs}``."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(ini)
    return [c.replace("{posargs}", "").strip() for section in parser.sections()
            for c in parser[section].get("commands", "").splitlines() if c.strip()]


def run_page(page: Path | str, cwd: Path, env: dict[str, str], run_dir: Path | None = None,
             text: str | None = None) -> tuple[list[str], list[Step]]:
    """Run a page's steps in ``cwd``; returns one line per failed command and the steps
    that ran (files, commands run, collections, skips)."""
    name = Path(page).name
    text = Path(page).read_text(encoding="utf-8") if text is None else text
    failures, done = [], []
    for step in steps(text):
        if step.kind == "file":
            target = cwd / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text, encoding="utf-8")
        elif step.kind in ("run", "collect"):
            command = step.text
            if "RUN_DIR" in command:
                assert run_dir is not None, f"{name}:{step.line}: RUN_DIR but no run directory"
                command = command.replace("RUN_DIR", str(run_dir))
            problem = run_one(command, step.kind, cwd, env)
            if problem:
                failures.append(f"{name}:{step.line}: {step.text}: {problem}")
        done.append(step)
    return failures, done


def run_one(command: str, kind: str, cwd: Path, env: dict[str, str]) -> str | None:
    """Why one command failed, or None."""
    try:
        result = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True,
                                capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"still running after {TIMEOUT} s"
    out = result.stdout + result.stderr
    tail = out.strip()[-1500:]
    if result.returncode != 0:
        return f"exit {result.returncode}: {tail}"
    if "Traceback (most recent call last)" in out or "INTERNALERROR" in out:
        return f"a traceback: {tail}"
    if kind == "collect":
        counts = [int(n) for n in COLLECTED.findall(result.stdout)]
        if not counts or counts[-1] == 0:
            return f"collected nothing: {tail}"
    return None


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what an outer pytest run sets for itself (xdist's
    worker name, the current test) or what would point a run at another cluster."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k not in ("KREPLICA_CLUSTER", "KREPLICA_OUTPUT")}
    env.update(extra)
    return env
