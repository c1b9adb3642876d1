"""Values written as the spec writes them (engine.model.values and the schemas' ``itf:`` hints): a set
as ``{a, b}``, a function as ``(k1 :> v1 @@ k2 :> v2)``, a sequence as ``<<a, b>>``, in the TLC-style
trace, in the ITF trace (``#set``, ``#map``), and read back by ``replay``."""
import json
import re

import pytest
import yaml

from conftest import ROOT, TEST_MODELS, run_cli
from engine.model.loader import list_models, load_model, variable_shapes
from engine.model.values import format_value
from engine.errors import UsageError
from engine.traces.itf import parse_shape


def test_values_by_their_hint():
    constants = {"Clients": ["c1", "c2"]}
    assert format_value(["b", "a"]) == "<<b, a>>"                      # no hint: a sequence
    assert format_value(["a", "b"], parse_shape("set(str)")) == "{a, b}"
    assert format_value([], parse_shape("set")) == "{}"
    assert format_value([1, 2], parse_shape("fun(Clients, int)"), constants) == "(c1 :> 1 @@ c2 :> 2)"
    assert format_value([{"k": 1, "v": True}], parse_shape("pairs(bool)")) == "(1 :> TRUE)"
    assert format_value({"isr": ["r1", "r2"], "log": [None]}, parse_shape("rec{isr: set}")) == \
        "[isr |-> {r1, r2}, log |-> <<Nil>>]"
    assert format_value([[["b1"]], []], parse_shape("fun(Clients, seq(set))"), constants) == \
        "(c1 :> <<{b1}>> @@ c2 :> <<>>)"
    assert format_value({"t": "AP", "status": ""}) == '[t |-> AP, status |-> ""]'
    # nil(-1): an integer column whose -1 is the model value Nil (bookkeeper's client fields).
    nil = parse_shape("rec{v: nil(-1), w: int}")
    assert format_value({"v": -1, "w": -1}, nil) == "[v |-> Nil, w |-> -1]"


def test_nil_hint_reads_and_writes_tlcs_nil():
    from pyspark.sql.types import IntegerType, StructField, StructType
    from engine.traces.itf import from_itf, to_itf
    dt = StructType([StructField("v", IntegerType()), StructField("w", IntegerType())])
    shape = parse_shape("rec{v: nil(-1), w: int}")
    assert to_itf({"v": -1, "w": -1}, dt, shape, {}) == {"v": "Nil", "w": {"#bigint": "-1"}}
    assert from_itf({"v": "Nil", "w": -1}, dt, shape, {}, "t") == {"v": -1, "w": -1}
    assert from_itf({"v": 3}, dt, shape, {}, "t") == {"v": 3, "w": None}  # a field the record lacks: NULL
    with pytest.raises(UsageError, match=r"^t: record fields \['x'\] are not among the schema's \['v', 'w'\]$"):
        from_itf({"x": 1}, dt, shape, {}, "t")
    with pytest.raises(UsageError, match=r"nil\(N\) takes an integer, got 'x'"):
        parse_shape("nil(x)", "s.yml: variable v")


def test_every_set_and_function_variable_has_its_hint():
    """A variable whose TLA+ type is ``SUBSET S`` is written as a set; one of type ``[C -> T]``, C a
    set constant, as a function over C (an array in C's order)."""
    for root in (ROOT, TEST_MODELS):
        for name in list_models(root):
            m = load_model(name, root)
            shapes = variable_shapes(m)
            for v in m.variables:
                where = f"{name}: {v.name} ({v.tla})"
                if v.tla.startswith("SUBSET "):
                    assert v.name in shapes and shapes[v.name].kind == "set", where
                over = re.match(r"^\[(\w+) ->", v.tla)
                if over and over.group(1) in m.constants and m.constants[over.group(1)].type.startswith("set<"):
                    assert v.name in shapes and (shapes[v.name].kind, shapes[v.name].domain) == \
                        ("fun", over.group(1)), where


def test_ledger_chaining_trace_writes_sets_and_functions(capsys, tmp_path, model_copy):
    """A real model's counterexample (ledger chaining, with a test-only invariant the first entry on
    a bookie breaks): c_state, [Clients -> Client], is written as a function over Clients,
    b_ledgers, SUBSET Ledger, as a set, the ledger lists as sequences; the ITF trace says #map and
    #set, and replaying it finds every step legal."""
    sql = model_copy / "actions_sql" / "ledger_chaining" / "invariants" / "NoLedgerOnBookies.sql"
    sql.write_text("-- test-only invariant: b_ledgers = {}\nsize(b_ledgers) = 0\n")
    schema_path = model_copy / "schemas" / "ledger_chaining.yml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["invariants"].append("NoLedgerOnBookies")
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    wh = tmp_path / "wh"
    code, out, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining", "--set", "Clients=c1,c2",
                             "--invariant", "NoLedgerOnBookies", "--warehouse", str(wh), "--quiet")
    assert code == 12, err[-3000:]
    lines = out.splitlines()
    assert lines[:3] == ["Error: Invariant NoLedgerOnBookies is violated.", "Error: The behavior up to this point is:",
                         "State 1: <Initial predicate>"]
    waiting = "[client |-> {c}, leader |-> FALSE, status |-> WAITING, llist |-> <<>>, llist_version |-> -1, " \
              "ledger |-> [id |-> 0, open |-> FALSE, version |-> -1]]"
    assert lines[3] == " /\\ c_state = (c1 :> " + waiting.format(c="c1") + " @@ c2 :> " + waiting.format(c="c2") + ")"
    assert " /\\ b_ledgers = {}" in lines[:12]
    last = lines[lines.index("State 6: <WriteToLedger>"):]
    assert " /\\ c_state = (c1 :> [client |-> c1, leader |-> TRUE, status |-> HAS_OPEN_LEDGER, llist |-> <<1>>, " \
           "llist_version |-> 1, ledger |-> [id |-> 1, open |-> TRUE, version |-> 0]] @@ c2 :> " + \
           waiting.format(c="c2") + ")" in last
    assert " /\\ md_llist = <<1>>" in last
    assert "*/\\ b_ledgers = {[id |-> 1, entry |-> 0, fenced |-> FALSE]}" in last

    run_id = next(ln.split()[1] for ln in lines if ln.startswith("Run "))
    itf = json.loads(next(wh.glob(f"ledger_chaining/{run_id}/trace.itf.json")).read_text())
    end = itf["states"][-1]
    assert end["b_ledgers"] == {"#set": [{"id": {"#bigint": "1"}, "entry": {"#bigint": "0"}, "fenced": False}]}
    assert [k for k, _ in end["c_state"]["#map"]] == ["c1", "c2"]
    assert end["md_llist"] == [{"#bigint": "1"}]

    code, out, err = run_cli(capsys, "--models", str(model_copy), "replay", run_id, "--warehouse", str(wh))
    assert code == 0, out + err[-3000:]
    assert out.strip().splitlines()[-1] == "Replay of 6 states against ledger_chaining: every step is a legal transition."
