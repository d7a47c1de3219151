"""Where an integer creation's CreateContainer hook spends its time beside N running shared
containers (issue 45), on an in-memory host: no runtime, no cgroups, the plugin's own work only.

The service is the plugin's (``PlacementService`` behind the NRI handler, the kernel fast path
on, the background pusher running on the event loop as in the daemon) on a 2-CPU machine like
this lab's host; records ride on answers only, as on containerd 1.7 and 2.1 (decision 51). Each
round decodes a ``CreateContainerRequest`` for a Guaranteed 1-CPU container, runs the handler and
encodes the answer, as the NRI plugin service does; then the container is stopped and removed and
the pusher left to grow the pool back, as ``bench/creation.py`` removes each pod. The kernel is a
dict (``--write-us`` adds a busy wait per container written, to stand in for the kernel's own
cost: 11.6-17.5 µs per cgroup v1 write on this host; 0 by default: the plugin's own share).

Prints, per N (``--sizes``; 0 is the baseline: the same hook with nothing to shrink), the hook's
p50 / max and its split: the plan (the engine's decision), the kernel writes (the updater's
calls), the answer (encode), and the rest (translation, bookkeeping, logging, metrics); how many
updates each answer carried (a lagging record riding on it is a runc update containerd makes
before it creates the container). ``--profile`` prints cProfile's top functions for the largest
N. Prints figures only.

Run: ``python bench/hook_profile.py [--sizes 0,200,500] [--rounds 20] [--write-us 0]
[--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.payload import decode, encode
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, CpusetEngine
from cpuset_core.ports import UpdateOutcome
from cpuset_lab.machines import MachineShape, build_topology
from cpuset_service.placement import PlacementService

PERIOD = 100_000
T = TypeVar("T")


class Split:
    """Seconds spent in each timed part during the current round."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {"plan": 0.0, "kernel": 0.0}

    def timed(self, part: str, call: Callable[..., T]) -> Callable[..., T]:
        def wrapper(*args: Any, **kwargs: Any) -> T:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.parts[part] += time.perf_counter() - start
        return wrapper


class DictKernel:
    """The kernel as a dict; ``write_us`` of busy wait per container written."""

    def __init__(self, write_us: float) -> None:
        self.cpus: dict[str, str] = {}
        self.write_s = write_us / 1e6

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        for update in updates:
            if self.write_s:
                until = time.perf_counter() + self.write_s
                while time.perf_counter() < until:
                    pass
            self.cpus[update.container_id] = update.cpus.format()
        return UpdateOutcome(failed=(), detail="")


def _pod(name: str, qos: str) -> pb.PodSandbox:
    parent = {"guaranteed": f"/kubepods/pod{name}", "burstable": f"/kubepods/burstable/pod{name}"}
    return pb.PodSandbox(id=f"sb-{name}", name=name, namespace="bench", uid=f"uid-{name}",
                         linux=pb.LinuxPodSandbox(cgroup_parent=parent[qos]))


def _container(name: str, pod: pb.PodSandbox, cpus: float) -> pb.Container:
    cpu = pb.LinuxCPU()
    cpu.quota.value = int(cpus * PERIOD)
    cpu.period.value = PERIOD
    cpu.shares.value = int(cpus * 1024)
    return pb.Container(id=f"{name}-{'0' * 56}", pod_sandbox_id=pod.id, name=name,
                        linux=pb.LinuxContainer(
                            cgroups_path=f"{pod.linux.cgroup_parent}/{name}",
                            resources=pb.LinuxResources(cpu=cpu)))


async def _rounds(size: int, rounds: int, write_us: float,
                  profiler: cProfile.Profile | None) -> dict[str, list[float]]:
    topology = build_topology(MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2,
                                           threads_per_core=1))
    service = PlacementService(CpusetEngine(topology))
    handler = CpusetNriHandler(service)
    split = Split()
    service.pusher.kernel.updater = DictKernel(write_us)
    service.pusher.may_send_records = lambda: False  # containerd 1.7 and 2.1 (decision 51)
    kernel = service.pusher.kernel
    kernel.updater.apply = split.timed("kernel", kernel.updater.apply)  # type: ignore[method-assign]
    engine = service.engine
    for name in ("plan_create", "commit"):
        if hasattr(engine, name):
            setattr(engine, name, split.timed("plan", getattr(engine, name)))

    async def ignore(_batch: Sequence[ContainerUpdate]) -> None:
        return None

    pusher = asyncio.create_task(service.pusher.run(ignore))
    for n in range(size):
        shared = _pod(f"web{n}", "burstable")
        handler.on_create_container(shared, _container(f"app{n}", shared, 0.1))
    await asyncio.sleep(0.01)
    figures: dict[str, list[float]] = {k: [] for k in
                                       ("hook", "plan", "kernel", "encode", "rest", "carried")}
    for r in range(rounds + 1):  # the first is not counted (the first writes)
        db = _pod(f"db{r}", "guaranteed")
        request = encode(pb.CreateContainerRequest(pod=db, container=_container("pg", db, 1)))
        split.parts = dict.fromkeys(split.parts, 0.0)
        if profiler is not None and r:
            profiler.enable()
        start = time.perf_counter()
        req = decode(pb.CreateContainerRequest(), request)
        adjust, updates = handler.on_create_container(req.pod, req.container)
        handled = time.perf_counter()
        response = pb.CreateContainerResponse(update=updates)
        if adjust is not None:
            response.adjust.CopyFrom(adjust)
        encode(response)
        end = time.perf_counter()
        if profiler is not None:
            profiler.disable()
        if r:
            figures["hook"].append(end - start)
            figures["plan"].append(split.parts["plan"])
            figures["kernel"].append(split.parts["kernel"])
            figures["encode"].append(end - handled)
            figures["rest"].append(handled - start - split.parts["plan"] - split.parts["kernel"])
            figures["carried"].append(len(updates))
        handler.on_stop_container(req.pod, req.container)
        handler.on_remove_container(req.pod, req.container)
        handler.on_pod_sandbox_gone(req.pod, removed=True)
        await asyncio.sleep(0.005)  # the pusher grows the pool back
    pusher.cancel()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,200,500")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--write-us", type=float, default=0.0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{args.rounds} rounds per size, kernel write {args.write_us} µs per container; ms")
    print("N shared | hook p50 / max | plan | kernel | encode | rest | updates carried (max)")
    for size in sizes:
        profiler = cProfile.Profile() if args.profile and size == max(sizes) else None
        f = asyncio.run(_rounds(size, args.rounds, args.write_us, profiler))
        p50 = {k: statistics.median(v) * 1000 for k, v in f.items() if k != "carried"}
        print(f"{size:8d} | {p50['hook']:6.2f} / {max(f['hook']) * 1000:6.2f} | "
              f"{p50['plan']:5.2f} | {p50['kernel']:5.2f} | {p50['encode']:5.2f} | "
              f"{p50['rest']:5.2f} | {max(f['carried']):.0f}", flush=True)
        if profiler is not None:
            stats = pstats.Stats(profiler, stream=sys.stdout)
            stats.sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
