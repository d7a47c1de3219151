"""The machine shapes of the VM lab: what each guest's emulated hardware and kernel look like,
and which ``tests/vm`` modules it runs.

A shape is plain data; ``qemu_args()`` turns it into QEMU's ``-cpu``/``-smp``/``-numa`` options
and ``facts()`` into what the guest's tests expect the kernel to report (``shape.json``), so a
test can first check that the guest really is the machine it claims to be.

CPU numbering follows QEMU's ``-smp sockets=S,cores=C,threads=T``: CPU ``n`` is thread
``n % T`` of core ``n // T``, and socket ``n // (C*T)``; so with two threads, ``2k`` and
``2k+1`` are siblings. An Intel CPU model is needed for the guest to see those siblings under
software emulation (AMD models show none).

A shape may carry PCI devices on known NUMA nodes (``NvmeDrive``): each sits behind its own PCI
expander bridge (QEMU's ``pxb-pcie``, which takes ``numa_node=``), so the guest kernel reports
that node in the function's ``numa_node``, as firmware does for a device of a real socket.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cpuset_core.cpuset import CPUSet

CPU_MODEL: Final = "Skylake-Server"
LOCAL: Final = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One NUMA node: its CPUs (a Linux list) and its memory (0: a memoryless node)."""

    cpus: str
    memory_mib: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmeDrive:
    """An NVMe controller with one namespace (a sparse image file on the host), behind a PCI
    expander bridge on NUMA node ``node`` and a root port of its own."""

    name: str
    """QEMU's id for the drive and the controller's serial number (``/sys/class/nvme/*/serial``):
    what tells the guest which controller it is looking at."""
    node: int
    bus: int
    """The bridge's first bus number (``bus_nr``): its root port is ``bus:00.0`` and the
    controller ``bus+1:00.0``. Bridges need ranges that leave room below them."""
    chassis: int
    """The root port's chassis number, unique in the machine."""
    size_mib: int = 16

    @property
    def pci_address(self) -> str:
        """The controller's PCI function as the guest kernel names it."""
        return f"0000:{self.bus + 1:02x}:00.0"

    def image(self, directory: Path) -> Path:
        return directory / f"{self.name}.img"

    def qemu_args(self, directory: Path) -> list[str]:
        """The bridge, its root port, the drive (backed by ``image(directory)``) and the
        controller."""
        bridge, port = f"pxb-{self.name}", f"rp-{self.name}"
        return ["-device", f"pxb-pcie,id={bridge},bus_nr={self.bus},numa_node={self.node},"
                           "bus=pcie.0",
                "-device", f"pcie-root-port,id={port},bus={bridge},chassis={self.chassis},"
                           "slot=0",
                "-drive", f"if=none,id={self.name},file={self.image(directory)},format=raw",
                "-device", f"nvme,drive={self.name},serial={self.name},bus={port}"]

    def make_image(self, directory: Path) -> None:
        """A sparse file of ``size_mib``: the guest never writes to it."""
        with self.image(directory).open("wb") as image:
            image.truncate(self.size_mib << 20)

    def facts(self) -> dict[str, object]:
        return {"pci": self.pci_address, "numa_node": self.node, "driver": "nvme",
                "serial": self.name}


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """One guest: topology, NUMA layout, kernel command line, cgroup version, the plugin's
    configuration and the test modules (under ``tests/vm``) that prove what it is for."""

    name: str
    summary: str
    nodes: tuple[Node, ...]
    tests: tuple[str, ...]
    sockets: int = 2
    cores: int = 2
    threads: int = 2
    distances: dict[tuple[int, int], int] = field(default_factory=dict)
    """``(a, b) -> distance`` for ``a < b``; pairs not given are 20 (QEMU's remote default)."""
    kernel_args: tuple[str, ...] = ()
    cgroup: int = 2
    isolated: str = ""
    """What ``isolcpus=`` makes ``/sys/devices/system/cpu/isolated`` show."""
    plugin_config: str = ""
    """TOML the plugin runs with (``run --config``); empty: the built-in defaults."""
    reserved: str = ""
    """``cpus.reserved`` of ``plugin_config``, repeated for the tests."""
    systemd: bool = False
    """systemd as PID 1 (virtme-ng's ``--systemd``): containerd runs as ``containerd.service``
    with runc's systemd cgroup driver and pods get the kubelet's systemd-driver slices."""
    in_ci: bool = False
    runs_image: bool = False
    """Its tests run the DaemonSet's pod from the image ``scripts/build-image`` leaves (built
    on this machine before the guest boots when missing: the guest has no network)."""
    nvme: tuple[NvmeDrive, ...] = ()
    """NVMe controllers on known NUMA nodes; the guest loads the ``nvme`` driver for them."""

    @property
    def cgroup_driver(self) -> str:
        """The kubelet's and runc's cgroup driver in this guest."""
        return "systemd" if self.systemd else "cgroupfs"

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores * self.threads

    @property
    def memory_mib(self) -> int:
        return sum(node.memory_mib for node in self.nodes)

    def distance(self, a: int, b: int) -> int:
        if a == b:
            return LOCAL
        return self.distances.get((min(a, b), max(a, b)), 20)

    def qemu_args(self, devices: Path | None = None) -> list[str]:
        """``-cpu``, ``-smp``, memory backends and ``-numa`` options (after virtme-ng's own,
        which they override), then the PCI devices, whose images are in ``devices`` (needed
        when the shape has any)."""
        args = ["-cpu", CPU_MODEL, "-smp",
                f"{self.cpus},sockets={self.sockets},cores={self.cores},threads={self.threads}"]
        for index, node in enumerate(self.nodes):
            spec = f"node,nodeid={index}"
            for span in CPUSet.parse(node.cpus).format().split(","):
                spec += f",cpus={span}"
            if node.memory_mib:
                args += ["-object", f"memory-backend-ram,id=ram{index},size={node.memory_mib}M"]
                spec += f",memdev=ram{index}"
            args += ["-numa", spec]
        # QEMU wants every pair once distances are given at all.
        for a in range(len(self.nodes)):
            for b in range(a + 1, len(self.nodes)):
                args += ["-numa", f"dist,src={a},dst={b},val={self.distance(a, b)}"]
        if self.nvme:
            if devices is None:
                raise ValueError(f"shape {self.name} has NVMe drives: name their image directory")
            for drive in self.nvme:
                args += drive.qemu_args(devices)
        return args

    def facts(self) -> dict[str, object]:
        """What the guest's kernel must report (the tests' ``shape.json``)."""
        per_core = [CPUSet.range(c * self.threads, c * self.threads + self.threads - 1).format()
                    for c in range(self.sockets * self.cores)]
        return {
            "name": self.name,
            "cpus": CPUSet.range(0, self.cpus - 1).format(),
            "sockets": self.sockets,
            "threads_per_core": self.threads,
            "cores": per_core,
            "nodes": [node.cpus for node in self.nodes],
            "memoryless": [i for i, node in enumerate(self.nodes) if not node.memory_mib],
            "distances": [[self.distance(a, b) for b in range(len(self.nodes))]
                          for a in range(len(self.nodes))],
            "isolated": self.isolated,
            "reserved": self.reserved,
            "cgroup": self.cgroup,
            "cgroup_driver": self.cgroup_driver,
            "nvme": [drive.facts() for drive in self.nvme],
            "tests": list(self.tests),
        }


_TWO_NODES = (Node(cpus="0-3", memory_mib=1024), Node(cpus="4-7", memory_mib=1024))
_CORE_TESTS = ("test_shape.py", "test_smt.py", "test_numa_mems.py", "test_hotplug.py")
# One controller per node, each behind its own expander bridge. Bus ranges 0x20 and 0x40 stay
# clear of the root bus's (virtme-ng's own devices) and of each other.
_NVME_PER_NODE = (NvmeDrive(name="nvme-node0", node=0, bus=0x20, chassis=10),
                  NvmeDrive(name="nvme-node1", node=1, bus=0x40, chassis=11))

SHAPES: Final = {shape.name: shape for shape in (
    Shape(name="default",
          summary="2 sockets x 2 cores x 2 threads, 2 NUMA nodes, an NVMe controller on each, "
                  "cgroup v2",
          nodes=_TWO_NODES, distances={(0, 1): 21},
          nvme=_NVME_PER_NODE,
          tests=(*_CORE_TESTS, "test_devices.py", "test_alignment.py", "test_workloads.py",
                 "test_dry_run.py", "test_start_failures.py", "test_quiet.py",
                 "test_quiet_irqbalance.py"),
          in_ci=True),
    # The default machine again, with only the chaos soak taking CPUs offline and back (its
    # own containerd and plugin: ~4 minutes of CI for a 1-minute walk, so CI runs the soak on
    # the host, and hotplug in test_hotplug.py); NRI_CPUSET_VM_SOAK_MINUTES, _SEED.
    Shape(name="soak",
          summary="the default shape, running the chaos soak with CPUs going offline and back",
          nodes=_TWO_NODES, distances={(0, 1): 21}, tests=("test_shape.py", "test_soak.py")),
    # The default machine running only the isolation bench (bench/isolation.py, issue 43) with
    # its own containerd and plugins: figures for docs/performance.md, not a test of the plugin
    # (NRI_CPUSET_VM_BENCH_ARGS sets its size).
    Shape(name="isolation-bench",
          summary="the default shape running the isolation bench (its table in isolation.txt)",
          nodes=_TWO_NODES, distances={(0, 1): 21}, nvme=_NVME_PER_NODE,
          tests=("test_shape.py", "test_isolation_bench.py")),
    Shape(name="memoryless",
          summary="2 sockets x 2 cores x 2 threads, 4 NUMA nodes, node 3 without memory, "
                  "cgroup v2",
          nodes=(Node(cpus="0-1", memory_mib=768), Node(cpus="2-3", memory_mib=768),
                 Node(cpus="4-5", memory_mib=768), Node(cpus="6-7", memory_mib=0)),
          distances={(0, 1): 12, (0, 2): 32, (0, 3): 32, (1, 2): 32, (1, 3): 32, (2, 3): 12},
          tests=("test_shape.py", "test_numa_mems.py", "test_memoryless.py")),
    Shape(name="isolcpus",
          summary="the default shape booted with isolcpus=6-7, plugin reserving 0-1 strictly",
          nodes=_TWO_NODES, distances={(0, 1): 21},
          kernel_args=("isolcpus=6-7",), isolated="6-7", reserved="0-1",
          plugin_config='[cpus]\nreserved = "0-1"\nstrict_reservation = true\n',
          tests=("test_shape.py", "test_isolated.py")),
    Shape(name="cgroup-v1",
          summary="the default shape with cgroup v1 hierarchies mounted instead of v2",
          nodes=_TWO_NODES, distances={(0, 1): 21}, cgroup=1, tests=_CORE_TESTS),
    # Smaller than the others: systemd and its cgroup driver make every boot and every
    # container slower under emulation, and what it is for needs no second socket.
    Shape(name="systemd",
          summary="1 socket x 2 cores x 2 threads, systemd as PID 1, containerd.service with "
                  "SystemdCgroup, pods in kubepods slices, cgroup v2",
          sockets=1, nodes=(Node(cpus="0-3", memory_mib=2048),), systemd=True, in_ci=True,
          runs_image=True,
          # The pod's module last: it stops the session guest's plugin process and runs the
          # DaemonSet's pod on that guest's containerd (one plugin registered at a time).
          tests=("test_shape.py", "test_cold_boot.py", "test_systemd.py",
                 "test_systemd_reload.py", "test_daemonset_pod.py")),
)}
"""Every shape, by name; ``in_ci`` marks the ones CI runs."""

DEFAULT_SHAPE: Final = "default"
