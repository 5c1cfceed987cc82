"""The documented-commands runner (tests/doc_commands.py) on planted pages: which lines it
finds, which it runs, collects or skips, the files it writes, and that a broken command, a
pytest run that collects nothing and an install line not allow-listed all fail. The README
and the quick start themselves run in tests/integration/test_quickstart.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import doc_commands
from tests.doc_commands import run_page, steps

REPO = Path(__file__).resolve().parents[2]
PAGE = """# A page

```sh
kreplica matrices
pytest tests/system -m smoke \\
  -n 2
# a comment
python3 -m tox -e soak -- --kreplica-duration 3600
```

```console
$ kreplica check RUN_DIR --json
{"passed": true}
```

```python
print("not a file: no path line")
```

```yaml
# matrices/mine.yaml
extends: smoke
```

```text
kreplica not-a-shell-block
```
"""


def test_steps_are_the_shell_lines_and_files_in_page_order():
    found = steps(PAGE)
    assert [(s.line, s.kind, s.path or s.text) for s in found] == [
        (4, "run", "kreplica matrices"),
        (5, "collect", "pytest tests/system -m smoke -n 2 --collect-only -q"),
        (8, "skip", "python3 -m tox -e soak -- --kreplica-duration 3600"),
        (12, "run", "kreplica check RUN_DIR --json"),
        (21, "file", "matrices/mine.yaml"),
    ]
    assert found[2].reason == doc_commands.SKIPPED[found[2].text]


def test_a_tox_ini_block_contributes_its_commands():
    page = ("```ini\n# tox.ini\n[testenv:k]\ncommands = pytest --pyargs pytest_kreplica.plan"
            " -m smoke {posargs}\n```\n")
    assert [s.kind for s in steps(page)] == ["file", "collect"]
    assert steps(page)[1].text == "pytest --pyargs pytest_kreplica.plan -m smoke --collect-only -q"


@pytest.mark.parametrize("line", ["pip install requests", "python3 -m tox -e mine",
                                  "python3 -m venv elsewhere"])
def test_an_install_line_not_allow_listed_is_refused(line):
    with pytest.raises(ValueError, match="SKIPPED"):
        steps(f"```sh\n{line}\n```\n")


def env() -> dict[str, str]:
    return doc_commands.clean_env(PYTHONPATH=str(REPO))


def test_a_broken_readme_command_fails(tmp_path):
    """A README with one good and one broken command: only the broken one is reported, with
    its line and its exit status."""
    readme = tmp_path / "README.md"
    readme.write_text("```sh\nkreplica --help\nkreplica matrices --no-such-option\n```\n")
    failures, done = run_page(readme, tmp_path, env())
    assert len(done) == 2
    assert len(failures) == 1 and failures[0].startswith(
        "README.md:3: kreplica matrices --no-such-option: exit 2"), failures


def test_a_pytest_line_that_collects_nothing_or_errs_fails(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("```sh\n"
                      "pytest tests/system -m no_such_marker_anywhere\n"
                      "pytest tests/system --kreplica-matrix no-such-matrix\n"
                      "```\n")
    failures, _ = run_page(readme, REPO, env())
    assert [f.split(": ", 2)[0] for f in failures] == ["README.md:2", "README.md:3"], failures
    # pytest's own statuses: 5 no tests collected, 4 a usage (matrix) error
    assert "exit 5: no tests collected" in failures[0], failures
    assert "exit 4" in failures[1] and "no-such-matrix" in failures[1], failures


def test_files_are_written_before_the_commands_after_them(tmp_path):
    page = ("```yaml\n# matrices/mine.yaml\ndimensions: {acks: [1]}\n```\n"
            "```sh\nkreplica matrices\n```\n")
    failures, done = run_page("p.md", tmp_path, env(), text=page)
    assert failures == [] and [s.kind for s in done] == ["file", "run"]
    assert (tmp_path / "matrices" / "mine.yaml").read_text() == "# matrices/mine.yaml\n" \
        "dimensions: {acks: [1]}\n"


def test_run_dir_is_replaced_and_required(tmp_path):
    page = "```sh\necho RUN_DIR > seen.txt\n```\n"
    failures, _ = run_page("p.md", tmp_path, env(), run_dir=tmp_path / "run-1", text=page)
    assert failures == []
    assert (tmp_path / "seen.txt").read_text().strip() == str(tmp_path / "run-1")
    with pytest.raises(AssertionError, match="RUN_DIR but no run directory"):
        run_page("p.md", tmp_path, env(), text=page)
