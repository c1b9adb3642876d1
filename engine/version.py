"""The engine's version. It is part of every run id: bump it whenever what a search computes or
stores changes (states, fingerprints, counts, tables), so that an upgraded engine never returns an
older engine's stored result as its own, nor resumes its runs. An edit that changes neither keeps
the version, and runs stay resumable."""
__version__ = "0.2.0"
