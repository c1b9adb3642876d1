import os
import sys

from engine.cli.main import main

code = main()
sys.stdout.flush()
sys.stderr.flush()
# Leave without running interpreter teardown: py4j and delta-rs background threads can abort it.
os._exit(code)
