"""Matrix files: load, validate, expand into cases, name them and mark them.

A matrix is a YAML file (``matrices/<name>.yaml``) naming a scenario and, per dimension, a
list of values. Expansion is the cartesian product (or, with ``strategy: pairwise``, a
covering array in which every pair of values occurs), minus ``exclude`` entries, plus
``include`` entries. Pure logic (no pytest, no Kafka): the plugin turns ``Case`` objects into
``pytest.param``s.

    dimensions.py  the table DIMENSIONS: parser, default, type, id part, markers per dimension
    case.py        Case (typed attributes generated from the table) and Matrix
    expand.py      product / pairwise, defaults, cross-dimension checks, ids, markers
    catalog.py     where matrices come from: shipped, a project's directory, a path
    extends.py     reading a file's YAML strictly; ``extends:`` a shipped or project matrix
    load.py        YAML files: validate, expand
"""

from __future__ import annotations

from .case import Case, Matrix
from .catalog import PATH, PROJECT, SHIPPED, Catalog, shipped_dir
from .dimensions import DIMENSIONS, FAULT_ONLY, Dimension, InvalidValue, static_markers
from .expand import STRATEGIES, derive_semantics
from .load import TOP_LEVEL_KEYS, load_all, load_matrix, parse_matrix, resolve_matrices

__all__ = ["DIMENSIONS", "FAULT_ONLY", "PATH", "PROJECT", "SHIPPED", "STRATEGIES", "TOP_LEVEL_KEYS",
           "Case", "Catalog", "Dimension",
           "InvalidValue", "Matrix", "derive_semantics", "load_all", "load_matrix",
           "parse_matrix", "resolve_matrices", "shipped_dir", "static_markers"]
