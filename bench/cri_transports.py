"""The daemon's CRI transport (h2_unary) beside grpcio on a real containerd (needs root and
scripts/install-containerd; ``NRI_CPUSET_RUNTIME=2.x`` for containerd 2.1).

Prints, in one run on the same containerd:
- resident memory (VmRSS) of a fresh interpreter that imports the daemon's modules, then after
  one CRI ListContainers through h2, and through grpcio (median of ``--rss-runs`` processes);
- the time of one CRI call through each transport, alternating, with N running containers:
  ListContainers (its answer grows with N) and Version (a small call; also through h2 with a
  new connection per call, which h2_unary avoids by keeping one), and the ratio h2 / grpcio
  at the median.

Run: ``python bench/cri_transports.py [--containers 100,500] [--calls 40]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dense_node import DenseNode
from rss_probe import DAEMON_IMPORTED

from cpuset_adapters.cri.client import CriClient
from cpuset_adapters.cri.grpc_transport import GrpcTransport
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation

# The daemon's imports (``nri-cpuset run`` down to the CRI inventory), then one call.
_RSS_PROBE = DAEMON_IMPORTED + """from cpuset_adapters.cri.client import CriClient
if sys.argv[2] == "grpc":
    from cpuset_adapters.cri.grpc_transport import GrpcTransport
    client = CriClient(sys.argv[1], timeout=10, transport=GrpcTransport(sys.argv[1]))
else:
    client = CriClient(sys.argv[1], timeout=10)
count = len(client.list_containers())
grpc = any(m.split(".")[0] == "grpc" for m in sys.modules)
print(before, rss(), count, grpc)
"""


def _rss(socket: Path, transport: str) -> tuple[int, int, int, bool]:
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(socket), transport],  # noqa: S603
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return int(out[0]), int(out[1]), int(out[2]), out[3] == "True"


def _memory(socket: Path, runs: int) -> None:
    print(f"VmRSS of a fresh interpreter, median of {runs} (MiB): daemon imported -> after one "
          "ListContainers")
    for transport in ("h2", "grpc"):
        samples = [_rss(socket, transport) for _ in range(runs)]
        before = statistics.median(s[0] for s in samples) / 1024
        after = statistics.median(s[1] for s in samples) / 1024
        print(f"  {transport:5} {before:6.1f} -> {after:6.1f} (+{after - before:.1f}); "
              f"{samples[0][2]} containers listed; grpc imported: {samples[0][3]}")


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def _compare(name: str, calls: int, **ways: Callable[[], object]) -> None:
    for _ in range(3):  # warm every way up
        for way in ways.values():
            way()
    times: dict[str, list[float]] = {label: [] for label in ways}
    for _ in range(calls):  # alternating, so noise hits every way alike
        for label, way in ways.items():
            times[label].append(_timed(way))
    for label, values in times.items():
        ordered = sorted(values)
        print(f"  {name:15} {label:13} p50 {statistics.median(values):7.2f} ms  "
              f"p90 {ordered[int(0.9 * (len(ordered) - 1))]:7.2f} ms  max {ordered[-1]:7.2f} ms")
    ratio = statistics.median(times["h2"]) / statistics.median(times["grpc"])
    print(f"  {name:15} h2 / grpc at p50: {ratio:.2f}")


def _fresh(client: CriClient) -> Callable[[], object]:
    """Version through h2 on a new connection each time (what h2_unary does not do)."""
    def call() -> object:
        client.transport.close()  # drops the kept connection
        return client.version()
    return call


def _times(lab: LabContainerd, counts: list[int], calls: int) -> None:
    node = DenseNode(lab)
    address = str(lab.cri_address)
    with (CriClient(address, timeout=30) as h2, CriClient(address, timeout=30) as fresh,
          CriClient(address, timeout=30, transport=GrpcTransport(address)) as grpc):
        for count in counts:
            node.grow_to(count)
            size = len(h2.call("RuntimeService", "ListContainers", pb.ListContainersRequest(),
                               pb.ListContainersResponse).SerializeToString())
            print(f"{count} running containers (ListContainers answer: {size / 1024:.0f} KiB), "
                  f"{calls} calls per transport")
            _compare("ListContainers", calls, h2=h2.list_containers, grpc=grpc.list_containers)
            _compare("Version", calls, h2=h2.version, grpc=grpc.version,
                     h2_per_call=_fresh(fresh))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", default="100,500",
                        help="running container counts, ascending, comma-separated")
    parser.add_argument("--calls", type=int, default=40, help="timed calls per transport")
    parser.add_argument("--rss-runs", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (it runs containerd)", file=sys.stderr)
        return 2
    counts = sorted(int(n) for n in args.containers.split(","))
    with tempfile.TemporaryDirectory(prefix="cri-bench-") as tmp:
        lab = LabContainerd(Path(tmp) / "lab", installation=find_installation())
        try:
            lab.start()
            lab.import_image()
            print(f"containerd {lab.runtime.version}")
            _memory(lab.cri_address, args.rss_runs)
            _times(lab, counts, args.calls)
            _memory(lab.cri_address, args.rss_runs)  # again, with the largest listing
        finally:
            lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
