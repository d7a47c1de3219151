"""The daemon reads CRI without grpc (decision 35): importing it costs about 14 MB of RSS.
Checked in a fresh interpreter, through the daemon's own modules and a real failed call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[3] / "src"

PROBE = """
import json, sys
import cpuset_cli.daemon.plugin, cpuset_cli.daemon.inventory
from cpuset_adapters.cri.client import CriClient, CriError

client = CriClient(sys.argv[1], timeout=2.0)
try:
    client.list_containers()
except CriError as err:
    failed = err.code_name
else:
    failed = None
print(json.dumps({"failed": failed, "transport": type(client.transport).__name__,
                  "grpc": sorted(m for m in sys.modules if m.split(".")[0] == "grpc")}))
"""


def run_probe(code: str, tmp_path: Path) -> Any:
    """What ``code`` printed as JSON, run in a fresh interpreter on this tree's sources with a
    CRI socket path nothing serves as its argument; it must exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "missing.sock")],
        env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_daemons_cri_path_never_imports_grpc(tmp_path: Path) -> None:
    report = run_probe(PROBE, tmp_path)
    assert report == {"failed": "UNAVAILABLE", "transport": "H2UnaryTransport", "grpc": []}


def test_the_probe_would_see_grpc_if_the_path_imported_it(tmp_path: Path) -> None:
    probe = PROBE.replace("import cpuset_cli.daemon.plugin,",
                          "import cpuset_adapters.cri.grpc_transport, cpuset_cli.daemon.plugin,")
    assert "grpc" in run_probe(probe, tmp_path)["grpc"]


AT_REST = """
import json, sys
import cpuset_cli.main, cpuset_cli.commands.run, cpuset_cli.daemon.serve, cpuset_cli.daemon.plugin
from cpuset_adapters.cgroupfs import CgroupReader
from cpuset_adapters.cri.start_probe import CriStartProbe
from cpuset_adapters.cri.transport import CriError

def cri_modules():
    return sorted(m for m in sys.modules
                  if m.split(".")[0] in ("h2", "hpack", "hyperframe")
                  or m.startswith("cpuset_adapters.cri.proto"))

at_rest = cri_modules()
try:
    CriStartProbe(sys.argv[1], CgroupReader()).reports({"c1": "/nowhere"})
except CriError as err:
    failed = err.code_name
print(json.dumps({"at_rest": at_rest, "failed": failed, "after_a_call": bool(cri_modules())}))
"""


def test_the_daemon_holds_no_cri_client_until_it_makes_a_cri_call(tmp_path: Path) -> None:
    # The CRI client costs about 2 MiB resident (h2, hpack, the CRI messages); a healthy
    # node's daemon never makes a CRI call, so its memory at rest must not carry it.
    report = run_probe(AT_REST, tmp_path)
    assert report == {"at_rest": [], "failed": "UNAVAILABLE", "after_a_call": True}
