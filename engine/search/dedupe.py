"""Stage: de-duplicate. One row per fingerprint within a level: the first in TLC's order (the
smallest ``_key``: the parent's position, then the action and the witness in the order Next names
them), since TLC keeps the first path by which it meets a state. The one place successors are
de-duplicated."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["first_per_state"]


def first_per_state(successors: DataFrame) -> DataFrame:
    """The row of each state (``_fp``, ``_fp2``) with the smallest ``_key``; the columns of ``successors``."""
    rest = [c for c in successors.columns if c not in ("_fp", "_fp2")]
    picked = (successors.groupBy("_fp", "_fp2")
              .agg(F.min_by(F.struct(*rest), F.col("_key")).alias("_s")))
    return picked.select(*[F.col(f"_s.{c}").alias(c) if c in rest else F.col(c) for c in successors.columns])
