#!/usr/bin/env bash
# The portable path on the lowest PySpark the engine supports: a fresh venv with PySpark 4.0.1, the
# lowest pandas and pyarrow of the engine's ranges (and a NumPy 1, which pandas 2.0's wheels are built
# against), the engine installed from this checkout, and the portable path's oracle tests run on it
# (the Spark Connect ones included).
#
#     tools/lowest_pyspark.sh [VENV_DIR]          (default: a temporary folder, removed after)
#
# Not part of the 20-minute suite: it installs a second PySpark and runs the long oracle tests.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-$(mktemp -d)/venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -e ".[local,test]" "pyspark[connect]==4.0.1" "pandas==2.0.3" "pyarrow==16.1.0" "numpy<2"
"$venv/bin/python" -c 'import pyspark, pandas, pyarrow; print("pyspark", pyspark.__version__, "pandas", pandas.__version__, "pyarrow", pyarrow.__version__)'
SSE_LONG_TESTS=1 "$venv/bin/python" -m pytest -q tests/test_portable.py tests/test_connect.py "${@:2}"
