"""What the daemon imports is part of its memory (decisions 35, 50, 52): no grpc for CRI, no CRI
client until a CRI call, no ssl until TLS credentials, no HTTP client until the publisher or
the events are on, no prometheus-client. Checked in fresh interpreters, through the daemon's
own modules and real calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cpuset_lab.machines import DUAL_SOCKET_HT, write_sysfs_tree
from tests.support.kube_api import CERT, serve

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


HEAVY = """
import json, sys
import cpuset_cli.main, cpuset_cli.commands.run
cpuset_cli.commands.run.load_daemon()
import cpuset_cli.bootstrap, cpuset_cli.daemon.plugin, cpuset_cli.daemon.inventory

HEAVY = ("ssl", "_ssl", "prometheus_client", "http.client", "http.server", "email",
         "urllib.request", "cpuset_adapters.kubernetes.api_client", "difflib", "tempfile",
         "yaml")
print(json.dumps(sorted(m for m in sys.modules
                        if any(m == h or m.startswith(h + ".") for h in HEAVY))))
"""


def test_the_daemon_at_rest_holds_no_tls_http_client_or_prometheus_client(
        tmp_path: Path) -> None:
    # ssl 4.2 MiB, prometheus-client 1.9 MiB, http.server and http.client 1.8 MiB resident
    # (docs/performance.md, "The daemon's memory"): none of it is used by a daemon whose
    # publisher and events are off (decision 56); difflib only suggests a misspelt key.
    assert run_probe(HEAVY, tmp_path) == []


def test_the_probe_would_see_ssl_if_asyncio_came_first(tmp_path: Path) -> None:
    # Without load_daemon's care, asyncio's own import loads ssl.
    probe = HEAVY.replace("import cpuset_cli.main,", "import asyncio, cpuset_cli.main,")
    assert "ssl" in run_probe(probe, tmp_path)


TLS_LATER = """
import json, sys
import cpuset_cli.main, cpuset_cli.commands.run
cpuset_cli.commands.run.load_daemon()
from cpuset_adapters.kubernetes.api_client import TopologyApi
from cpuset_adapters.kubernetes.credentials import from_kubeconfig

obj = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
       "metadata": {"name": "n"}, "zones": []}
seen = {}
endpoint = from_kubeconfig(sys.argv[2])
seen["plain"] = TopologyApi(endpoint).apply(obj)
seen["ssl_after_plain"] = "ssl" in sys.modules
endpoint = from_kubeconfig(sys.argv[3])
seen["ssl_with_tls_credentials"] = "ssl" in sys.modules
seen["tls"] = TopologyApi(endpoint).apply(obj)
seen["http_client"] = sorted(m for m in sys.modules if m in ("http.client", "email"))
print(json.dumps(seen))
"""


def test_the_api_client_loads_tls_when_its_credentials_ask_and_speaks_it(
        tmp_path: Path) -> None:
    with serve() as http_api, serve(tls=True) as https_api:
        plain = write_json_kubeconfig(tmp_path / "plain", f"http://127.0.0.1:{http_api.port}")
        tls = write_json_kubeconfig(tmp_path / "tls", f"https://127.0.0.1:{https_api.port}",
                                    ca=CERT)
        result = subprocess.run(
            [sys.executable, "-c", TLS_LATER, "-", str(plain), str(tls)],
            env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True, check=False,
            timeout=60)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {
            "plain": "created", "ssl_after_plain": False, "ssl_with_tls_credentials": True,
            "tls": "created", "http_client": []}
        assert https_api.requests[-1].method == "POST"


def write_json_kubeconfig(path: Path, server: str, *, ca: Path | None = None) -> Path:
    cluster: dict[str, str] = {"server": server}
    if ca is not None:
        cluster["certificate-authority"] = str(ca)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": cluster}],
        "users": [{"name": "lab", "user": {"token": "t"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
    return path


BUILT = """
import json, sys
from pathlib import Path
import cpuset_cli.main, cpuset_cli.commands.run
cpuset_cli.commands.run.load_daemon()
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.live_config import LiveConfig

tmp = Path(sys.argv[2])
source = SysfsTopologySource(tmp / "sys")
config = LiveConfig.load(tmp / "config.toml", required=True, topology=source.read_topology())
daemon = bootstrap.build_daemon(source, environ={}, name="nri-cpuset", index="99",
                                config=config, hotplug_interval=0)
print(json.dumps({"events": daemon.events is not None,
                  "publisher": daemon.publisher is not None,
                  "http_client": "http.client" in sys.modules, "ssl": "ssl" in sys.modules}))
"""


@pytest.mark.parametrize("on", [True, False])
def test_the_composition_root_brings_neither_http_client_nor_ssl_with_its_features(
        tmp_path: Path, on: bool) -> None:
    # http.client (with email, which parses its answers' headers) cost 0.9 MiB with the
    # publisher or the events on: the API client speaks HTTP/1.1 itself (kubernetes/http11.py).
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path / "sys")
    kubeconfig = write_json_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    (tmp_path / "config.toml").write_text(
        f'[runtime]\nstatus_socket = ""\ncgroup_root = "{tmp_path}"\n'
        f'[topology_publisher]\nenabled = {str(on).lower()}\nnode_name = "worker-1"\n'
        f'kubeconfig = "{kubeconfig}"\n[events]\nenabled = {str(on).lower()}\n')
    result = subprocess.run(
        [sys.executable, "-c", BUILT, "-", str(tmp_path)], env={"PYTHONPATH": str(SRC)},
        capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"events": on, "publisher": on, "http_client": False,
                                         "ssl": False}


PROTOBUF = """
import json, sys
import cpuset_cli.main, cpuset_cli.commands.run
cpuset_cli.commands.run.load_daemon()
import cpuset_cli.bootstrap, cpuset_cli.daemon.plugin, cpuset_cli.daemon.inventory
from cpuset_adapters.nri import payload, translate
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.protobuf_deferred import PURE_PYTHON_MESSAGES, DeferredModule
from cpuset_core.cpuset import CPUSet
from tests.builders.nri import container, pod

p = pod("p1", pins="2-3")
wire = pb.SynchronizeRequest(pods=[p], containers=[container("c1", p, cpus=2)])
request = payload.decode(pb.SynchronizeRequest(), payload.encode(wire))
facts = translate.container_facts(request.containers[0])
answer = pb.SynchronizeResponse(update=translate.updates([]))
answer.update.append(translate.container_update(facts.id, CPUSet([2, 3]), None))
decoded = payload.decode(pb.SynchronizeResponse(), payload.encode(answer))
PURE = ("google.protobuf.text_format", "google.protobuf.internal.decoder",
        "google.protobuf.internal.encoder", "google.protobuf.internal.containers")
print(json.dumps({"round_trip": decoded.update[0].linux.resources.cpu.cpus,
                  "deferred": isinstance(sys.modules[PURE_PYTHON_MESSAGES], DeferredModule),
                  "pure_python": sorted(m for m in PURE if m in sys.modules)}))
"""


def run_protobuf_probe(environ: dict[str, str]) -> Any:
    result = subprocess.run(
        [sys.executable, "-c", PROTOBUF],
        env={"PYTHONPATH": f"{SRC}:{SRC.parent}", **environ}, capture_output=True, text=True,
        check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_daemon_decodes_and_encodes_nri_without_protobufs_pure_python_messages() -> None:
    # protobuf's pure-Python message implementation (python_message, text_format, its decoder
    # and encoder) costs the daemon 1.2 MiB resident; upb's messages never call into it.
    assert run_protobuf_probe({}) == {"round_trip": "2-3", "deferred": True, "pure_python": []}


def test_the_probe_would_see_the_pure_python_messages_on_that_backend() -> None:
    # The pure-Python backend's messages are python_message: there it is loaded, not deferred.
    report = run_protobuf_probe({"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"})
    assert report["round_trip"] == "2-3"
    assert not report["deferred"]
    assert "google.protobuf.internal.decoder" in report["pure_python"]
