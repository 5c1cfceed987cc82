"""Where matrices come from: the ones shipped in the package, a project's own directory, and
files named by path.

The package carries the repository's ``matrices/`` (``pytest_kreplica/matrices``). A
project's directory (ini ``kreplica_matrices_dir``, default ``matrices`` under rootdir) adds
its names to the shipped ones and overrides a shipped matrix of the same name. With no
selection, a run takes every matrix of the project's directory when it has one, else every
shipped matrix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import MatrixError

SHIPPED = "shipped"
PROJECT = "project"
PATH = "path"
SUFFIXES = (".yaml", ".yml")


def shipped_dir() -> Path:
    """The matrices the package ships (the repository's ``matrices/``, included at build)."""
    return Path(__file__).resolve().parent.parent / "matrices"


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and p.is_file())


@dataclass(frozen=True)
class Entry:
    """One matrix file the catalog knows: its name, file and where it comes from."""

    name: str
    path: Path
    source: str  # SHIPPED | PROJECT | PATH


class Catalog:
    """The shipped matrices overlaid by a project's directory (``project_dir``; ``None`` or
    a missing directory: shipped only). ``required``: a missing ``project_dir`` is an error
    (the directory was configured, not defaulted)."""

    def __init__(self, project_dir: Path | None = None, *, required: bool = False,
                 shipped: Path | None = None):
        self.project_dir = project_dir
        self.required = required
        self.shipped = shipped_dir() if shipped is None else shipped
        self.entries: dict[str, Entry] = {p.stem: Entry(p.stem, p, SHIPPED)
                                          for p in _yaml_files(self.shipped)}
        if self.has_project():
            for p in _yaml_files(project_dir):
                self.entries[p.stem] = Entry(p.stem, p, self.source_of(p))

    def has_project(self) -> bool:
        return self.project_dir is not None and self.project_dir.is_dir()

    def source_of(self, path: Path) -> str:
        """SHIPPED for a shipped file (also when reached through a checkout's ``matrices``),
        PROJECT for one of the project directory, else PATH."""
        resolved = path.resolve()
        if resolved.parent == self.shipped.resolve():
            return SHIPPED
        if self.project_dir is not None and resolved.parent == self.project_dir.resolve():
            return PROJECT
        return PATH

    def names(self) -> list[str]:
        return sorted(self.entries)

    def check_project(self) -> None:
        if self.required and not self.has_project():
            raise MatrixError(f"{self.project_dir}: kreplica_matrices_dir: no such directory; "
                              f"allowed: a directory of matrix *.yaml files (or leave the ini "
                              f"key unset for the shipped matrices: {', '.join(self.names())})")

    def default_paths(self) -> list[Path]:
        """Every matrix of the project's directory when it has one, else every shipped one."""
        self.check_project()
        if self.has_project():
            return _yaml_files(self.project_dir)
        return [e.path for e in self.entries.values() if e.source == SHIPPED]

    def find(self, name: str, *, besides: Path | None = None) -> Path | None:
        """The file of matrix ``name``: the project's, else the shipped one; ``besides`` (a
        file extending a matrix of its own name) is skipped, so it reaches the shipped one."""
        candidates = []
        if self.has_project():
            candidates.append(self.project_dir / f"{name}.yaml")
        candidates.append(self.shipped / f"{name}.yaml")
        skip = besides.resolve() if besides is not None else None
        for path in candidates:
            if path.is_file() and path.resolve() != skip:
                return path
        return None

    def resolve(self, selectors: Iterable[str]) -> list[Path]:
        """Matrix files for ``--kreplica-matrix`` values (a name or a path to a YAML file);
        with none, ``default_paths``."""
        selectors = list(selectors)
        if not selectors:
            return self.default_paths()
        paths: list[Path] = []
        for sel in selectors:
            candidate = Path(sel)
            if candidate.suffix in SUFFIXES or candidate.is_file():
                path = candidate if candidate.is_absolute() else Path.cwd() / candidate
                found = path if path.is_file() else None
            else:
                found = self.find(sel)
                path = found or (self.project_dir if self.has_project()
                                 else self.shipped) / f"{sel}.yaml"
            if found is None:
                raise MatrixError(f"{path}: --kreplica-matrix: no such matrix file; allowed: "
                                  f"a path or a matrix name ({', '.join(self.names()) or 'none'})")
            if found not in paths:
                paths.append(found)
        return paths
