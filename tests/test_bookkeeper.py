"""BookKeeper's master protocol (BookKeeperProtocol.tla) against TLC's figures
(shared/oracle: bk_master_2b_sym, bk_master_2b_nosym)."""
import json

import pytest

from conftest import load_pipeline, run_cli


def check(capsys, tmp_path, *args):
    code, out, err = run_cli(capsys, "check", "bookkeeper", "--warehouse", str(tmp_path / "wh"),
                             "--json", "--quiet", *args)
    assert out.strip(), err
    return code, json.loads(out)


@pytest.mark.long
def test_two_bookies_with_symmetry_matches_tlc(capsys, tmp_path):
    code, res = check(capsys, tmp_path, "--config", "bk_master_2b_sym")
    assert code == 0
    assert res["symmetry"] is True and res["deadlock_check"] is False
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", 71_528, 245_771, 28)


@pytest.mark.long
def test_two_bookies_without_symmetry_matches_tlc(capsys, tmp_path):
    code, res = check(capsys, tmp_path, "--config", "bk_master_2b_sym", "--no-symmetry")
    assert code == 0
    assert res["symmetry"] is False
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", 285_773, 982_019, 28)


def test_every_action_s_generated_methods_are_under_hotspot_s_limit(spark, capsys):
    """pipelines/method_sizes.py: the two ChangesEnsemble actions, split three times by a one-row
    generator (README, Writing a model), and every other action compile to methods under the
    session's 8,000 bytes, so Spark runs none of them operator by operator."""
    assert load_pipeline("method_sizes").main(["bookkeeper", "--config", "bk_master_2b_nosym"], spark=spark) == 0
    out = capsys.readouterr().out
    assert "ClientChangesEnsemble" in out and "RecoveryClientChangesEnsemble" in out
    assert "OVER" not in out and out.rstrip().endswith("0 of 21 actions over the limit")
    assert load_pipeline("method_sizes").main(["bookkeeper", "--config", "no_such_config"], spark=spark) == 2
    err = capsys.readouterr().err
    assert err.startswith("method_sizes: ") and "no_such_config" in err
