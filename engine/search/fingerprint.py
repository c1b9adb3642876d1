"""Stage: fingerprint. Each successor gets ``_fp`` and ``_fp2``, 128 bits that identify its state
(engine.search.encoding), or with symmetry its orbit (engine.search.symmetry: the fingerprint of the
orbit's smallest member). The row keeps the state as generated, so every step of a trace is a real
successor of the step before."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from engine.model.loader import RunSpec
from engine.search.encoding import fingerprint_sql
from engine.search.symmetry import canonical_fingerprint_stages, check_paths
from engine.settings import Settings

__all__ = ["Fingerprinter"]


class Fingerprinter:
    def __init__(self, schema: StructType, spec: RunSpec, settings: Settings):
        fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], using=spec.fingerprint)
        self.stages = [[f"{fp1} AS _fp", f"{fp2} AS _fp2"]]
        if spec.symmetry:
            check_paths(spec.model.schema_path, schema, spec.model.symmetry_shapes)
            self.stages = canonical_fingerprint_stages(
                schema, spec.model.symmetry_shapes, {s: spec.constants[s] for s in spec.model.symmetry},
                using=spec.fingerprint, literal_permutations=settings.literal_permutations)

    def apply(self, df: DataFrame) -> DataFrame:
        """``df`` with ``_fp`` and ``_fp2`` (the projections in order: each may name the columns of
        those before it; only the fingerprints are kept of them)."""
        cols = df.columns
        for stage in self.stages:
            df = df.selectExpr("*", *stage)
        return df.select(*cols, "_fp", "_fp2")
