import os
import sys

import engine.runtime.class_archive as class_archive
from engine.cli.main import main

code = main()
sys.stdout.flush()
class_archive.finish()  # when this run's JVM writes Spark's class archive, wait for it
sys.stderr.flush()
# Leave without running interpreter teardown: py4j and delta-rs background threads can abort it.
os._exit(code)
