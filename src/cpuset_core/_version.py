"""The version of both distributions built from this repository, defined here and only here.

``cpuset-core`` (src/pyproject.toml) and ``nri-cpuset`` (the root setup.py, which also pins its
``cpuset-core`` dependency to it) read it when they are built, and ``nri-cpuset --version``
prints it. Change it per semantic versioning: see docs/library.md and CHANGELOG.md.
"""

__version__ = "0.6.0"
