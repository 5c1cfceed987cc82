"""The history tables read on Spark, with explicit schemas (no inference pass): every column
of the contract (``tables.COLUMNS``) and ``_bad`` for each row that breaks it."""

from __future__ import annotations

from ...errors import HistoryError
from ..engine.reuse import per_session
from .tables import COLUMNS, CORRUPT, INT, Table, parquet_files, parquet_schema_problem


def spark_schema(name: str, with_corrupt: bool = False):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [StructField(c.name, LongType() if c.kind == INT else StringType(), True)
              for c in COLUMNS[name]]
    if with_corrupt:
        fields.append(StructField(CORRUPT, StringType(), True))
    return StructType(fields)


def read_spark(spark, table: Table, row: str | None = None):
    """A DataFrame with every column of the contract (absent optional ones as null) and
    ``_bad`` (1 where the row breaks the contract: unparsable, a wrong type, a required
    column null, a value not allowed (a status, an isolation level), an offset below 0);
    with ``row``, that column numbers the rows in read order (in the same step: each step
    is analysed when it is made)."""
    if table.format == "json":
        df = (spark.read.schema(spark_schema(table.name, with_corrupt=True))
              .option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT)
              .json(str(table.path)))
    else:
        problem = parquet_schema_problem(table)
        if problem:
            raise HistoryError(problem)
        raw = spark.read.parquet(*[str(p) for p in parquet_files(table.path)])
        df = raw.select(*_parquet_columns(table.name, frozenset(raw.columns)))
    columns = _contract_columns(table.name, table.format == "json")
    if row is not None:  # built per read: each plan owns its nondeterministic expression
        from pyspark.sql import functions as F

        columns = [*columns, F.monotonically_increasing_id().alias(row)]
    return df.select(*columns)


@per_session
def _parquet_columns(name: str, present: frozenset[str]) -> list:
    """Every column of the contract from a Parquet table that has ``present``: the absent
    ones as null, each cast to its contract type."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType

    return [(F.col(c.name) if c.name in present else F.lit(None))
            .cast(LongType() if c.kind == INT else StringType()).alias(c.name)
            for c in COLUMNS[name]]


@per_session
def _contract_columns(name: str, json_format: bool) -> list:
    """The columns ``read_spark`` returns: the contract's, and ``_bad``. Kept per session:
    built per check, these few dozen expressions were a fifth of a warm small check's py4j
    round trips (230 of 1122)."""
    from pyspark.sql import functions as F

    columns = COLUMNS[name]
    broken = F.col(CORRUPT).isNotNull() if json_format else F.lit(False)
    for col in columns:
        if col.required:
            broken = broken | F.col(col.name).isNull()
        if col.allowed is not None:  # an optional column may be null
            broken = broken | (F.col(col.name).isNotNull() & ~F.col(col.name).isin(*col.allowed))
        if col.minimum is not None:
            broken = broken | F.coalesce(F.col(col.name) < col.minimum, F.lit(False))
    # Columns, not names: a name in a select is one more round trip each, every time
    return [*[F.col(c.name) for c in columns], F.coalesce(broken, F.lit(True)).alias("_bad")]
