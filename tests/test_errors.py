"""Bad input gets a clear error that names what is wrong, exit status 2, and nothing written."""
import pytest

from conftest import run_cli


def assert_bad(capsys, tmp_path, argv, *needles):
    wh = tmp_path / "wh"
    code, out, err = run_cli(capsys, *argv, "--warehouse", str(wh))
    assert code == 2, err
    for n in needles:
        assert n in err, err
    assert not wh.exists(), "a rejected run must not write anything"
    return err


def test_unknown_model(capsys, tmp_path):
    assert_bad(capsys, tmp_path, ["check", "nope"], "unknown model 'nope'", "ledger_chaining")


def test_unknown_constant(capsys, tmp_path):
    assert_bad(capsys, tmp_path, ["check", "ledger_chaining", "--set", "Bookies=b1"],
               "no constant 'Bookies'", "Clients, LedgerLimit")


@pytest.mark.parametrize("setting,needle", [
    ("LedgerLimit=four", "constant LedgerLimit has type int: 'four' is not an integer"),
    ("Clients=c1,2x", "constant Clients has type set<model_value>"),
    ("LedgerLimit=TRUE", "is not an integer"),
])
def test_wrong_type(capsys, tmp_path, setting, needle):
    assert_bad(capsys, tmp_path, ["check", "ledger_chaining", "--set", setting], needle)


def test_unknown_invariant_and_configuration(capsys, tmp_path):
    assert_bad(capsys, tmp_path, ["check", "ledger_chaining", "--invariant", "Nope"], "no invariant 'Nope'")
    assert_bad(capsys, tmp_path, ["check", "ledger_chaining", "--config", "nope"], "no configuration 'nope'")


def test_sql_syntax_error_names_the_file(capsys, tmp_path, model_copy):
    f = model_copy / "actions_sql" / "ledger_chaining" / "LeaderChosen.sql"
    f.write_text(f.read_text().replace("SELECT * FROM choices", "SELEC * FROM choices"))
    wh = tmp_path / "wh"
    code, _, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining", "--warehouse", str(wh))
    assert code == 2
    assert str(f) in err and "SELEC" in err
    assert not wh.exists()


def test_action_missing_a_variable_names_the_file(capsys, tmp_path, model_copy):
    f = model_copy / "actions_sql" / "ledger_chaining" / "Abdicate.sql"
    f.write_text(f.read_text().replace("b_ledgers, next_entry_id,\n        _parent", "next_entry_id,\n        _parent"))
    code, _, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining",
                           "--warehouse", str(tmp_path / "wh"))
    assert code == 2 and str(f) in err and "missing ['b_ledgers']" in err


def test_malformed_schema_names_the_file(capsys, tmp_path, model_copy):
    f = model_copy / "schemas" / "ledger_chaining.yml"
    f.write_text(f.read_text() + "\n  - : [\n")
    code, _, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining",
                           "--warehouse", str(tmp_path / "wh"))
    assert code == 2 and str(f) in err and "not valid YAML" in err


@pytest.mark.parametrize("bad", ["arrray<int>", "int, `x` string"])
def test_variable_type_spark_does_not_know_names_the_variable(capsys, tmp_path, model_copy, bad):
    """The state's types are parsed in one call; a declaration Spark refuses (or one that would read
    as two columns) is still named by its variable and the schema file."""
    f = model_copy / "schemas" / "ledger_chaining.yml"
    text = f.read_text()
    assert text.count("    type: array<int>\n") == 1
    f.write_text(text.replace("    type: array<int>\n", f"    type: \"{bad}\"\n"))
    code, _, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining",
                           "--warehouse", str(tmp_path / "wh"))
    assert code == 2 and str(f) in err and f"{bad!r} is not a Spark SQL type" in err, err
    assert not (tmp_path / "wh").exists()


def test_undeclared_sql_file_is_rejected(capsys, tmp_path, model_copy):
    (model_copy / "actions_sql" / "ledger_chaining" / "Stray.sql").write_text("-- x\ntrue\n")
    code, _, err = run_cli(capsys, "--models", str(model_copy), "models")
    assert code == 2 and "Stray.sql" in err and "not declared" in err


def layout_error(capsys, tmp_path, models, model):
    """The one error line a model whose SQL folder breaks the layout rule gets (exit 2, nothing written)."""
    wh = tmp_path / "wh"
    code, _, err = run_cli(capsys, "--models", str(models), "check", model, "--warehouse", str(wh))
    assert code == 2, err
    assert not wh.exists()
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("model,name,kind,was,want", [
    ("ledger_chaining", "TypeOK", "an invariant", "invariants", ""),
    ("ledger_chaining", "LedgerLimit", "a constraint", "constraints", "invariants"),
    ("pulsar_compaction", "ConstantsAssumption", "an assumption", "assumptions", ""),
    ("verified_log", "vl_has", "a function", "functions", "findings"),
    ("verified_log", "LastProducerUnfinished", "a terminal finding", "findings", "functions"),
])
def test_declared_file_in_the_wrong_folder(capsys, tmp_path, model_copy, model, name, kind, was, want):
    """(a) An invariant, constraint, assumption, function or terminal finding whose file sits at the
    top of the model's folder or in another kind's folder is refused with where it belongs."""
    d = model_copy / "actions_sql" / model
    moved = d / want / f"{name}.sql"
    moved.parent.mkdir(exist_ok=True)
    (d / was / f"{name}.sql").rename(moved)
    assert layout_error(capsys, tmp_path, model_copy, model) == (
        f"error: {moved}: {name} is {kind}: move it to {d / was / f'{name}.sql'}")


@pytest.mark.parametrize("folder,keys", [
    ("", "init or actions"),
    ("invariants", "invariants"),
    ("constraints", "constraints"),
    ("assumptions", "assumes"),
    ("functions", "functions"),
    ("findings", "terminal_findings"),
])
def test_undeclared_file_in_any_folder(capsys, tmp_path, model_copy, folder, keys):
    """(b) A SQL file the schema does not declare, at the top or in any kind's folder."""
    d = model_copy / "actions_sql" / "ledger_chaining" / folder if folder else \
        model_copy / "actions_sql" / "ledger_chaining"
    d.mkdir(exist_ok=True)
    (d / "Stray.sql").write_text("-- x\ntrue\n")
    assert layout_error(capsys, tmp_path, model_copy, "ledger_chaining") == (
        f"error: {d}: SQL files ['Stray.sql'] are not declared in ledger_chaining.yml; "
        f"list them under {keys}, or remove them")


@pytest.mark.parametrize("name,kind,folder", [
    ("Abdicate", "an action", "invariants"),
    ("Init", "the init file", "constraints"),
])
def test_action_or_init_in_a_subfolder(capsys, tmp_path, model_copy, name, kind, folder):
    """(c) The init and action files sit at the top of the model's folder, never in a subfolder."""
    d = model_copy / "actions_sql" / "ledger_chaining"
    (d / f"{name}.sql").rename(d / folder / f"{name}.sql")
    assert layout_error(capsys, tmp_path, model_copy, "ledger_chaining") == (
        f"error: {d / folder / f'{name}.sql'}: {name} is {kind}: move it to {d / f'{name}.sql'}")


def test_sql_file_in_a_folder_the_loader_does_not_read(capsys, tmp_path, model_copy):
    d = model_copy / "actions_sql" / "ledger_chaining"
    (d / "helpers").mkdir()
    (d / "invariants" / "TypeOK.sql").rename(d / "helpers" / "TypeOK.sql")
    assert layout_error(capsys, tmp_path, model_copy, "ledger_chaining") == (
        f"error: {d / 'helpers' / 'TypeOK.sql'}: is in a folder the loader does not read; the init and action "
        f"files sit in {d}, the other kinds in its subfolders assumptions/, constraints/, findings/, functions/, "
        "invariants/, properties/: move it or remove it")


def test_missing_invariant_names_its_folder(capsys, tmp_path, model_copy):
    d = model_copy / "actions_sql" / "ledger_chaining"
    (d / "invariants" / "TypeOK.sql").unlink()
    assert layout_error(capsys, tmp_path, model_copy, "ledger_chaining") == (
        f"error: {model_copy / 'schemas' / 'ledger_chaining.yml'}: invariant 'TypeOK' has no SQL file; create "
        f"{d / 'invariants' / 'TypeOK.sql'} (or remove 'TypeOK' from the schema)")


def test_warehouse_that_is_not_a_directory(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli(capsys, "check", "ledger_chaining", "--warehouse", str(blocker / "wh"))
    assert code == 2 and str(blocker) in err and "not a directory" in err


def test_models_lists_constants_and_configurations(capsys):
    code, out, _ = run_cli(capsys, "models")
    assert code == 0
    assert "ledger_chaining" in out and "LedgerLimit : int = 4" in out and "lc_c3_lim4 (default)" in out


@pytest.mark.parametrize("held", ["1", "0"])
def test_an_action_failing_at_run_time_names_its_file(capsys, tmp_path, monkeypatch, held, test_models_copy):
    """An action whose SQL fails on some state (here a division by zero once the counter reaches 2)
    stops the search with that file, the line of the failing expression, the depth being computed
    and Spark's error: exit status 2, no trace of the engine, and no retry with a plan made each
    level (the same SQL would fail the same way). With the plan held and planned each level alike."""
    models = test_models_copy
    step = models / "actions_sql" / "counter" / "Step.sql"
    text = step.read_text()
    assert "SELECT x + s AS x," in text
    step.write_text(text.replace("SELECT x + s AS x,", "SELECT x + s + IF(x >= 2, 1 / 0, 0) AS x,"))
    line = step.read_text()[:step.read_text().index("1 / 0")].count("\n") + 1
    code, out, err = run_cli(capsys, "--models", str(models), "--setting", f"fixed_plan={held}", "check", "counter",
                             "--warehouse", str(tmp_path / "wh"))
    assert code == 2, err
    assert f"error: {step}:{line}: the model's SQL failed while computing depth 3: [DIVIDE_BY_ZERO]" in err
    assert "Traceback" not in err and "planning each level" not in err


def test_what_says_spark_stopped_under_a_command():
    """Spark's own words for a context stopped under a running job (an executor that could not reach its
    driver, a SparkContext stopped) mean exit 3 with that line; an error of the same kind not raised by
    PySpark's link to the JVM is not taken for it (tests/test_platform_resume.py kills a driver's JVM)."""
    from engine.errors import spark_lost
    stopped = RuntimeError("An error occurred while calling o1444.localCheckpoint.\n"
                           ": org.apache.spark.SparkException: Job 37 cancelled because SparkContext was shut down\n"
                           "\tat org.apache.spark.scheduler.DAGScheduler.$anonfun$cleanUpAfterSchedulerStop$1")
    try:
        raise ValueError("during the cleanup") from stopped
    except ValueError as exc:
        assert spark_lost(exc) == "org.apache.spark.SparkException: Job 37 cancelled because SparkContext was shut down"
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionError as exc:
        assert spark_lost(exc) is None


def test_a_spark_connect_session_the_server_lost_is_spark_stopped():
    """A Spark Connect server restarted within connect_wait no longer has the command's session: the
    client closes it on the new server-side session id and raises NO_ACTIVE_SESSION from then on.
    That is Spark lost (exit 3), as PySpark raises it; the same words from elsewhere are not
    (tests/test_connect.py restarts a server under a run, long)."""
    from pyspark.errors import PySparkAssertionError
    from pyspark.errors.exceptions.connect import SparkConnectException
    from engine.errors import spark_lost
    closed = SparkConnectException(errorClass="NO_ACTIVE_SESSION", messageParameters={})
    assert spark_lost(closed) == ("the Spark Connect server lost this command's session, as a server restarted "
                                  "under it does: [NO_ACTIVE_SESSION] No active Spark session found. Please create "
                                  "a new Spark session before running the code.")
    changed = PySparkAssertionError("Received incorrect server side session identifier for request. Please create "
                                    "a new Spark Session to reconnect. (b != a)")
    try:
        raise ValueError("during the cleanup") from changed
    except ValueError as exc:
        assert spark_lost(exc).endswith(": Received incorrect server side session identifier for request. Please "
                                        "create a new Spark Session to reconnect. (b != a)")
    assert spark_lost(RuntimeError("[NO_ACTIVE_SESSION] in a model's own text")) is None


def test_a_spark_error_raised_over_ctrl_c_is_a_stop_asked_for():
    """Ctrl-C in a block whose cleanup fetches the cancelled job's result: Spark's error is raised over
    the KeyboardInterrupt, which stays in its chain; that is a stop asked for, not a failure to plan
    around (tests/test_platform_resume.py presses Ctrl-C in a large level, long)."""
    from engine.search.control import cancelled, stop_requested
    try:
        try:
            raise KeyboardInterrupt
        finally:
            raise RuntimeError("An error occurred while calling o546.getResult.")
    except RuntimeError as exc:
        assert stop_requested(exc)
        try:
            raise ValueError("the held plan failed") from exc
        except ValueError as outer:
            assert stop_requested(outer)
    assert not stop_requested(RuntimeError("An error occurred while calling o546.getResult."))
    cancelled.set()
    try:
        assert stop_requested(RuntimeError("a job cancelled: the server's client went away"))
    finally:
        cancelled.clear()


def test_py4j_records_on_the_root_logger_are_dropped_once_a_session_is_made(caplog):
    """Py4J logs a connection cut mid-command with ``logging.exception`` on the root logger, which
    printed its traceback above the engine's one line of exit 3; a session's setup drops those
    records, as logged from Py4J's own file, and only those."""
    import logging
    import py4j.java_gateway
    from engine.runtime.session import _not_from_py4j, quiet_py4j_root_records
    quiet_py4j_root_records()
    quiet_py4j_root_records()
    log = ("import logging\ntry:\n    raise ConnectionResetError(104, 'Connection reset by peer')\n"
           "except OSError:\n    logging.exception('Exception while sending command.')\n")
    exec(compile(log, py4j.java_gateway.__file__, "exec"), {})
    assert caplog.records == []
    exec(compile(log, __file__, "exec"), {})
    assert [r.getMessage() for r in caplog.records] == ["Exception while sending command."]
    assert logging.getLogger().filters.count(_not_from_py4j) == 1
