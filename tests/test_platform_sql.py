"""``engine sql`` over a run's tables, and the same tables read by readers that are not Spark."""
import glob
import json
import os

import duckdb
import pytest
import polars as pl
from deltalake import DeltaTable

from conftest import TEST_MODELS
from platform_util import cli


def sql(wh, run, query, *more):
    return cli("--models", TEST_MODELS, "sql", run, query, "--warehouse", wh, *more)


def test_sql_prints_a_table_with_constants_as_variables(counter_ok):
    wh, res = counter_ok
    code, out, err = sql(wh, res["run_id"], "SELECT _depth, count(*) AS n, max(x) AS top FROM states "
                         "WHERE x < Max GROUP BY _depth ORDER BY _depth")
    assert code == 0, err
    want = (pl.read_delta(res["tables"]["states"]).filter(pl.col("x") < 5)
            .group_by("_depth").agg(pl.len().alias("n"), pl.col("x").max().alias("top")).sort("_depth"))
    lines = out.splitlines()
    assert [c.strip() for c in lines[0].split("|")] == ["_depth", "n", "top"]
    assert [[int(c) for c in ln.split("|")] for ln in lines[2:-1]] == [list(r) for r in want.iter_rows()]
    assert lines[-1] == f"({want.height} rows)"


def test_sql_json_joins_states_levels_and_outcome(counter_ok):
    wh, res = counter_ok
    code, out, _ = sql(wh, res["run_id"], "SELECT l.depth, l.new_states, count(s._fp) AS rows, "
                       "any_value(o.distinct_states) AS total FROM levels l JOIN states s ON s._depth = l.depth "
                       "CROSS JOIN outcome o GROUP BY l.depth, l.new_states ORDER BY l.depth", "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["columns"] == ["depth", "new_states", "rows", "total"]
    assert [r["rows"] for r in rep["rows"]] == [r["new_states"] for r in rep["rows"]] == [1, 2, 4, 7, 5, 1]
    assert {r["total"] for r in rep["rows"]} == {20} and rep["truncated"] is False


def test_sql_error_names_the_views_and_constants(counter_ok):
    wh, res = counter_ok
    code, out, err = sql(wh, res["run_id"], "SELECT nope FROM states")
    assert code == 2 and out == ""
    assert err.startswith(f"error: query over run {res['run_id']} failed: [UNRESOLVED_COLUMN.WITH_SUGGESTION]")
    assert "(views: states, levels, outcome, trace; constants: Cap, Limit, Max, Steps)" in err
    assert len(err.strip().splitlines()) == 1


def _duckdb_with_delta():
    """DuckDB with its delta extension from the duckdb-extension-delta wheel (no extension download)."""
    import duckdb_extension_delta
    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*",
                                 "delta.duckdb_extension"))
    assert ext, "duckdb-extension-delta ships no extension file"
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    con.execute(f"LOAD '{ext[0]}'")
    return con


def test_readers_that_are_not_spark_agree(counter_ok):
    wh, res = counter_ok
    states, levels = res["tables"]["states"], res["tables"]["levels"]
    n = res["distinct_states"]
    assert DeltaTable(states).to_pyarrow_table().num_rows == n
    assert pl.read_delta(states).height == n
    assert pl.read_delta(levels)["new_states"].sum() == n
    con = _duckdb_with_delta()
    assert con.sql(f"SELECT count(*) FROM delta_scan('{states}')").fetchone()[0] == n
    assert con.sql(f"SELECT count(DISTINCT (_fp, _fp2)) FROM delta_scan('{states}')").fetchone()[0] == n


def test_delta_reads_go_through_delta_rs_without_the_connector(counter_ok, monkeypatch):
    from engine.store.deltaio import delta_mode, read_delta
    from engine.errors import UsageError, WarehouseError
    from engine.runtime.session import get_spark
    from engine.settings import Settings
    wh, res = counter_ok
    spark = get_spark()
    assert delta_mode(spark) == "delta-rs"  # no io.delta classes here (no Maven to fetch the jars)
    assert read_delta(spark, res["tables"]["states"]).count() == res["distinct_states"]
    with pytest.raises(WarehouseError, match="SSE_DELTA=native, but the Delta Lake connector is not on Spark's classpath"):
        read_delta(spark, res["tables"]["states"], settings=Settings(delta="native"))
    with pytest.raises(UsageError, match="SSE_DELTA='jvm': expected one of auto, native, delta-rs"):
        Settings.from_env({"SSE_DELTA": "jvm"})
