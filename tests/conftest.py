import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_MODELS = Path(__file__).resolve().parent / "models"


@pytest.fixture(scope="session")
def spark():
    from engine.session import get_spark
    return get_spark()


@pytest.fixture
def model_copy(tmp_path):
    """A writable copy of the project's models (schemas/ and actions_sql/) to alter in a test."""
    root = tmp_path / "models"
    shutil.copytree(ROOT / "schemas", root / "schemas")
    shutil.copytree(ROOT / "actions_sql", root / "actions_sql")
    return root


def run_cli(capsys, *argv):
    """Run the command line in this process (sharing the Spark session); return (code, stdout, stderr)."""
    from engine.cli import main
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err
