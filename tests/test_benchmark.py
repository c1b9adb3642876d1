"""The benchmark script's helpers (no Spark): case parsing, process CPU time, the _benchmarks table."""
import importlib.util
import os

from deltalake import DeltaTable

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("benchmark", ROOT / "pipelines" / "benchmark.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_case_names_model_config_and_constants():
    assert bench.parse_case("ledger_chaining") == ("ledger_chaining", None, [])
    assert bench.parse_case("ledger_chaining:lc_c3_lim4+Clients=c1,c2+LedgerLimit=3") == \
        ("ledger_chaining", "lc_c3_lim4", ["Clients=c1,c2", "LedgerLimit=3"])


def test_cpu_seconds_counts_this_process_work():
    before = bench.cpu_seconds()
    x = 0
    for i in range(3_000_000):
        x += i * i
    assert bench.cpu_seconds() - before > 0.05
    assert bench.peak_rss_bytes(os.getpid()) > 10 << 20


def test_figures_are_appended_to_a_delta_table(tmp_path):
    row = {"case": "m", "distinct": 3, "wall_s": 1.5}
    path = bench.record([row], tmp_path, "local[2]")
    bench.record([{**row, "distinct": 4}], tmp_path, "local[1]")
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted((r["distinct"], r["master"]) for r in rows) == [(3, "local[2]"), (4, "local[1]")]
    assert all(r["at"] and r["cores"] == os.cpu_count() for r in rows)
