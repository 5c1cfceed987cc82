"""``kreplica matrices``: every matrix a run can name, one line each: its name, where it
comes from (shipped, the project's directory, or a path given on the command line), how
many cases it expands to, the markers that select it and its description."""

from __future__ import annotations

import argparse
from pathlib import Path

from .case import Matrix
from .catalog import PATH, Catalog, Entry
from .dimensions import hyphen_free
from .load import load_matrix

HEADER = ("name", "source", "cases", "markers", "description")


def entries(project_dir: Path | None, paths: list[Path]) -> tuple[Catalog, list[Entry]]:
    """The catalog's matrices (the project's over the shipped ones) and then ``paths``."""
    catalog = Catalog(project_dir)
    listed = [catalog.entries[name] for name in catalog.names()]
    listed += [Entry(p.stem, p, PATH) for p in paths]
    return catalog, listed


def markers(matrix: Matrix) -> list[str]:
    """The markers that select the matrix's cases: its name, its ``markers``, its ``marks``
    (those on some cases only)."""
    return list(dict.fromkeys([hyphen_free(matrix.name), *matrix.markers,
                               *matrix.subset_markers]))


def table(project_dir: Path | None, paths: list[Path]) -> list[tuple[str, ...]]:
    catalog, listed = entries(project_dir, paths)
    rows = [HEADER]
    for entry in listed:
        matrix = load_matrix(entry.path, catalog=catalog)
        rows.append((entry.name, entry.source, str(len(matrix.cases)),
                     " ".join(markers(matrix)), matrix.description))
    return rows


def run_matrices(args: argparse.Namespace) -> int:
    project = Path(args.directory).resolve()
    paths = [Path(p).resolve() for p in args.paths]
    rows = table(project, paths)
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER) - 1)]
    for row in rows:
        cells = [c.rjust(w) if i == 2 else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        print("  ".join([*cells, row[-1]]).rstrip())
    return 0
