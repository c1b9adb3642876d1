"""BookKeeper's master protocol (BookKeeperProtocol.tla) against TLC's figures
(shared/oracle: bk_master_2b_sym, bk_master_2b_nosym)."""
import json

import pytest

from conftest import run_cli


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
