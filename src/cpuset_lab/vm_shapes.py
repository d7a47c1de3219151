"""The machine shapes of the VM lab: what each guest's emulated hardware and kernel look like,
and which ``tests/vm`` modules it runs.

A shape is plain data; ``qemu_args()`` turns it into QEMU's ``-cpu``/``-smp``/``-numa`` options
and ``facts()`` into what the guest's tests expect the kernel to report (``shape.json``), so a
test can first check that the guest really is the machine it claims to be.

CPU numbering follows QEMU's ``-smp sockets=S,cores=C,threads=T``: CPU ``n`` is thread
``n % T`` of core ``n // T``, and socket ``n // (C*T)``; so with two threads, ``2k`` and
``2k+1`` are siblings. An Intel CPU model is needed for the guest to see those siblings under
software emulation (AMD models show none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

    def qemu_args(self) -> list[str]:
        """``-cpu``, ``-smp``, memory backends and ``-numa`` options (after virtme-ng's own,
        which they override)."""
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
            "tests": list(self.tests),
        }


_TWO_NODES = (Node(cpus="0-3", memory_mib=1024), Node(cpus="4-7", memory_mib=1024))
_CORE_TESTS = ("test_shape.py", "test_smt.py", "test_numa_mems.py", "test_hotplug.py")

SHAPES: Final = {shape.name: shape for shape in (
    Shape(name="default",
          summary="2 sockets x 2 cores x 2 threads, 2 NUMA nodes, cgroup v2",
          nodes=_TWO_NODES, distances={(0, 1): 21},
          tests=(*_CORE_TESTS, "test_dry_run.py", "test_start_failures.py", "test_soak.py"),
          in_ci=True),
    # The default machine again, with only the soak: for longer walks
    # (NRI_CPUSET_VM_SOAK_MINUTES, _SEED) without the other tests' minutes.
    Shape(name="soak",
          summary="the default shape, running the chaos soak with CPUs going offline and back",
          nodes=_TWO_NODES, distances={(0, 1): 21}, tests=("test_shape.py", "test_soak.py")),
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
          sockets=1, nodes=(Node(cpus="0-3", memory_mib=2048),), systemd=True,
          tests=("test_shape.py", "test_cold_boot.py", "test_systemd.py",
                 "test_systemd_reload.py")),
)}
"""Every shape, by name; ``default`` is the one CI runs."""

DEFAULT_SHAPE: Final = "default"
