"""What nri-cpuset's pyproject.toml cannot say statically: its version, which is cpuset-core's
(defined once, in src/cpuset_core/_version.py), and a dependency on exactly that cpuset-core,
so the plugin always runs the engine it was built and tested with."""

import ast
from pathlib import Path

from setuptools import setup


def _version() -> str:
    # Parsed, not imported: from an sdist only this one file of cpuset_core is there
    # (MANIFEST.in), and a build should not execute the engine.
    path = Path(__file__).resolve().parent / "src" / "cpuset_core" / "_version.py"
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__version__"):
            return str(ast.literal_eval(node.value))
    raise SystemExit(f"{path}: no __version__ = '...' assignment")


VERSION = _version()

REQUIREMENTS = [
    f"cpuset-core=={VERSION}",
    "attrs>=23.2",
    "cattrs>=23.2",
    "click>=8.1",
    # Tables for people in the operator CLI; kubectl's YAML output for `plan --pods`.
    "rich>=13.7",
    "PyYAML>=6.0.1",
    # NRI messages (the ttrpc framing is ours); must be at least what generated the modules.
    "protobuf>=7.35.1,<8",
    # No grpcio: the daemon and the CLI never import it (the lab's CRI client does: the `lab`
    # extra in pyproject.toml), and it was 19 MB of the image (decision 53).
    # The daemon's own CRI reads: unary gRPC over HTTP/2 in pure Python (cri/h2_unary.py),
    # because importing grpc would cost the daemon about 14 MB of RSS (decision 35).
    "h2>=4.2,<5",
    # systemd's D-Bus API for the units of containers in systemd scopes (decision 37): pure
    # Python, no dependencies; imported only when the plugin first writes a scope.
    "jeepney>=0.8,<1",
]

setup(version=VERSION, install_requires=REQUIREMENTS)
