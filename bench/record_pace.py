"""What the plugin sends after an integer creation on a runtime whose NRI locks cannot deadlock
(NRI v0.12.1 or later: the path where it calls UpdateContainers itself), when, and what it costs
the new pod's runp / create / start beside the runtime's floor (issue 45, decision 51).

That runtime (containerd 2.3+, e.g. 2.4.0-beta with NRI v0.12.2) cannot be installed here, so
its side is the lab's NRI runtime double (``tests/support/nri_runtime``) reporting NRI v0.12.2,
driven like containerd's CRI service drives NRI: every event under one NRI lock, each update
of an answer or of an UpdateContainers call holding that lock for an emulated runc update
(``--runc-update``), and the CRI work done outside it emulated by sleeps (a sandbox's start, a
runc create, a runc start). The plugin is a real ``nri-cpuset run`` process writing the
``cpuset.cpus`` of ``--shared`` fake shared containers, real cgroups under
``/sys/fs/cgroup/cpuset/nri-record-pace`` (root needed), first, as on a real node.

For each size: the runtime's floor (the same calls, no plugin connected), then the plugin as
built from this tree, then (``--before SRC``: a ``src`` directory of an older tree, e.g.
``git archive <commit> src | tar -x -C /tmp/before``) the plugin from there, run by
``PYTHONPATH``: its old pacing, measured in the same run. Each sample is an integer pod (1 CPU)
run, created, started; the shared containers on its CPU when its start returns (read from the
cgroups); every UpdateContainers call the plugin made from its creation's answer until every
shared container's record arrived, each by its time after that answer; then the pod removed
and its growth's records awaited the same way. Prints figures only; nothing is asserted. The
CRI-side times are emulated: the figures compare pacings, they are no runtime's own cost.

Run: ``sudo .venv/nox/e2e/bin/python bench/record_pace.py [--shared 200,500] [--samples 5]
[--before /tmp/before/src]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the runtime double and the NRI builders

from creation_figures import Creation, spread  # noqa: E402
from tests.builders.nri import container, pod  # noqa: E402
from tests.support.nri_runtime import RuntimeDouble  # noqa: E402

from cpuset_adapters.nri.proto import nri_pb2 as pb  # noqa: E402
from cpuset_core.cpuset import CPUSet  # noqa: E402
from cpuset_lab.cgroups import online_cpus  # noqa: E402
from cpuset_lab.plugin_process import PluginProcess  # noqa: E402

CGROUPS = Path("/sys/fs/cgroup/cpuset/nri-record-pace")
SANDBOX = 0.20  # seconds a sandbox's start takes outside the NRI lock (emulated)
CREATE_WORK = 0.05
"""Seconds between CreateContainer and PostCreateContainer outside the lock (emulated)."""
RUNC_CREATE = 0.08
"""Seconds of a start before its StartContainer event: the task's runc create (emulated)."""
RUNC_START = 0.02
"""Seconds between StartContainer and PostStartContainer: the task's runc start (emulated)."""
SETTLE = 120.0  # a hang guard for the records to arrive, never a judge of speed


@dataclass
class Sample(Creation):
    calls: list[tuple[float, int]] = field(default_factory=list)  # (s after the answer, n)
    start_done: float = 0.0  # seconds from the creation's answer to the start's return
    growth: list[tuple[float, int]] = field(default_factory=list)  # the same after the stop
    waits: list[float] = field(default_factory=list)  # runp/create/start: s behind our calls
    rode: int = 0  # records that rode on an answer, from its runp until all were sent
    rode_growth: int = 0  # the same from its stop


class EmulatedContainerd:
    """The CRI calls of one pod on the double, under its NRI lock as containerd makes them."""

    def __init__(self, rt: RuntimeDouble, runc_update: float, plugged: bool) -> None:
        self.rt, self.runc_update, self.plugged = rt, runc_update, plugged
        self.waited = 0.0  # seconds events waited for the lock: only the plugin's calls hold it
        self.riding: set[str] = set()  # whose update rode on an answer since last cleared

    async def event(self, event: int, method: str, request: object) -> bytes:
        """One NRI event under containerd's lock; the updates an answer carries applied there."""
        asked = time.monotonic()
        async with self.rt.nri_lock:
            self.waited += time.monotonic() - asked  # behind a call of the plugin's own
            conn = self.rt.plugin if self.plugged else None
            if conn is None or not conn.subscribed(event):
                return b""
            resp = await conn.call(method, request.SerializeToString())  # type: ignore[attr-defined]
            payload: bytes = resp.payload
            if method in ("CreateContainer", "StopContainer"):
                message = (pb.CreateContainerResponse if method == "CreateContainer"
                           else pb.StopContainerResponse).FromString(payload)
                self.riding.update(u.container_id for u in message.update)
                await asyncio.sleep(self.runc_update * len(message.update))
            return payload

    async def integer_pod(self, n: int) -> tuple[Sample, float, str]:
        """Run, create and start an integer pod; its sample, its creation's answer time
        (``time.monotonic``) and its CPUs."""
        p = pod(f"int{n}")
        c = container(f"int{n}", p, cpus=1)
        begin, self.waited = time.monotonic(), 0.0
        await asyncio.sleep(SANDBOX)
        await self.event(1, "RunPodSandbox", pb.RunPodSandboxRequest(pod=p))
        runp, waits = time.monotonic() - begin, [self.waited]
        begin, self.waited = time.monotonic(), 0.0
        payload = await self.event(4, "CreateContainer",
                                   pb.CreateContainerRequest(pod=p, container=c))
        answered = time.monotonic()
        cpus = pb.CreateContainerResponse.FromString(payload).adjust.linux.resources.cpu.cpus
        await asyncio.sleep(CREATE_WORK)
        await self.event(5, "PostCreateContainer",
                         pb.PostCreateContainerRequest(pod=p, container=c))
        create = time.monotonic() - begin
        waits.append(self.waited)
        begin, self.waited = time.monotonic(), 0.0
        await asyncio.sleep(RUNC_CREATE)
        await self.event(6, "StartContainer", pb.StartContainerRequest(pod=p, container=c))
        await asyncio.sleep(RUNC_START)
        await self.event(7, "PostStartContainer", pb.PostStartContainerRequest(pod=p, container=c))
        done = time.monotonic()
        waits.append(self.waited)
        sample = Sample(runp, create, done - begin, sharing=0, start_done=done - answered,
                        waits=waits)
        return sample, answered, cpus

    async def remove_pod(self, n: int) -> float:
        """Stop and remove the integer pod; ``time.monotonic`` when its stop was answered."""
        p = pod(f"int{n}")
        c = container(f"int{n}", p, cpus=1)
        await self.event(10, "StopContainer", pb.StopContainerRequest(pod=p, container=c))
        stopped = time.monotonic()
        await self.event(11, "RemoveContainer", pb.RemoveContainerRequest(pod=p, container=c))
        await self.event(2, "StopPodSandbox", pb.StopPodSandboxRequest(pod=p))
        await self.event(3, "RemovePodSandbox", pb.RemovePodSandboxRequest(pod=p))
        return stopped


def shared_containers(count: int) -> tuple[list[pb.PodSandbox], list[pb.Container]]:
    """``count`` running shared pods, each container in a real cgroup on every online CPU."""
    online = online_cpus().format()
    CGROUPS.mkdir(exist_ok=True)
    (CGROUPS / "cpuset.cpus").write_text(online)
    mems = (CGROUPS.parent / "cpuset.mems").read_text().strip()
    (CGROUPS / "cpuset.mems").write_text(mems)
    pods, containers = [], []
    for n in range(count):
        p = pod(f"shared{n}", qos="burstable")
        c = container(f"shared{n}", p, cpuset=online)
        c.state = pb.CONTAINER_RUNNING
        c.linux.resources.cpu.shares.value = 102
        directory = CGROUPS / f"c{n}"
        directory.mkdir(exist_ok=True)
        (directory / "cpuset.cpus").write_text(online)
        (directory / "cpuset.mems").write_text(mems)
        c.linux.cgroups_path = f"/nri-record-pace/c{n}"
        pods.append(p)
        containers.append(c)
    return pods, containers


def kernel_sharing(count: int, cpus: str) -> int:
    """Shared containers whose ``cpuset.cpus`` overlaps ``cpus`` (the new container's)."""
    mine = CPUSet.parse(cpus) if cpus else CPUSet()
    return sum(1 for n in range(count)
               if CPUSet.parse((CGROUPS / f"c{n}" / "cpuset.cpus").read_text().strip()) & mine)


async def records_since(runtime: EmulatedContainerd, mark: int, since: float, count: int,
                        ) -> list[tuple[float, int]]:
    """Wait until every one of ``count`` shared containers had its record sent after ``mark``
    (calls counted) or on an answer since the caller cleared ``runtime.riding``, or the hang
    guard; each call as (seconds after ``since``, containers)."""
    rt = runtime.rt
    deadline = time.monotonic() + SETTLE
    while True:
        ids = {u.container_id for r in rt.update_requests[mark:] for u in r.update}
        ids |= runtime.riding
        if len({i for i in ids if i.startswith("id-shared")}) >= count:
            break
        if time.monotonic() > deadline:
            print(f"    (hang guard: {len(ids)} of {count} records after {SETTLE:.0f} s)")
            break
        await asyncio.sleep(0.05)
    return [(t - since, len(r.update))
            for t, r in zip(rt.update_times[mark:], rt.update_requests[mark:], strict=True)]


def calls_line(samples: list[Sample], which: str) -> str:
    """What the plugin sent after each sample's creation (or stop), and when."""
    calls = [s.calls if which == "create" else s.growth for s in samples]
    rode = [s.rode if which == "create" else s.rode_growth for s in samples]
    during = [sum(1 for at, _ in c if at < s.start_done) for c, s in zip(calls, samples,
                                                                          strict=True)]
    firsts = [c[0][0] * 1000 for c in calls if c]
    lasts = [c[-1][0] for c in calls if c]
    sizes = sorted({n for c in calls for _, n in c})
    if not firsts:
        return "no UpdateContainers call"
    head = (f"records on answers {min(rode)}-{max(rode)}; "
            f"calls per sample {min(map(len, calls))}-{max(map(len, calls))} of {sizes} "
            f"container(s); first {min(firsts):+.0f} to {max(firsts):+.0f} ms, last "
            f"{min(lasts):+.2f} to {max(lasts):+.2f} s")
    if which == "create":
        head += f"; arrived before its start returned: {min(during)}-{max(during)}"
    return head


async def measure(workdir: Path, count: int, mode: str, args: argparse.Namespace,
                  ) -> list[Sample]:
    pods, containers = shared_containers(count)
    sock = workdir / f"nri-{mode}-{count}.sock"
    rt = RuntimeDouble(sock, version="0.12.2", pods=pods, containers=containers,
                       registration_timeout=60.0, request_timeout=60.0)
    rt.update_seconds = args.runc_update
    plugin = None
    async with rt:
        if mode != "floor":
            config = workdir / "config.toml"
            config.write_text("[runtime]\nkernel_updates = true\nverify_period = 0\n")
            plugin = PluginProcess(sock, workdir / f"plugin-{mode}-{count}.log",
                                   args=("--config", str(config)))
            saved = os.environ.get("PYTHONPATH")
            if mode == "before":
                os.environ["PYTHONPATH"] = args.before
            try:
                plugin.start()
            finally:
                os.environ.pop("PYTHONPATH", None)
                if saved is not None:
                    os.environ["PYTHONPATH"] = saved
            await rt.wait_ready(timeout=120.0)
        runtime = EmulatedContainerd(rt, args.runc_update, plugged=plugin is not None)
        samples = []
        try:
            for n in range(args.samples):
                mark = len(rt.update_requests)
                runtime.riding.clear()
                sample, answered, cpus = await runtime.integer_pod(n)
                if plugin is not None:
                    sample.sharing = kernel_sharing(count, cpus)
                    sample.calls = await records_since(runtime, mark, answered, count)
                    sample.rode = len(runtime.riding)
                mark = len(rt.update_requests)
                runtime.riding.clear()
                stopped = await runtime.remove_pod(n)
                if plugin is not None:
                    sample.growth = await records_since(runtime, mark, stopped, count)
                    sample.rode_growth = len(runtime.riding)
                samples.append(sample)
        finally:
            if plugin is not None:
                plugin.stop()
    return samples


def report(count: int, results: dict[str, list[Sample]]) -> None:
    floor = results["floor"]
    names = {"floor": "runtime floor (no plugin)", "after": "plugin, this tree",
             "before": "plugin, --before tree"}
    for mode, samples in results.items():
        over = None if mode == "floor" else floor
        phases = " | ".join(
            name + " " + spread([getattr(s, name) for s in samples],
                                over and [getattr(s, name) for s in over])
            for name in ("runp", "create", "start"))
        print(f"[{count:>4}] {names[mode]:<27} {phases}", flush=True)
        if mode != "floor":
            waited = " / ".join(f"{max(s.waits[i] for s in samples) * 1000:.1f}"
                                for i in range(3))
            print(f"[{count:>4}]   waited for the NRI lock behind the plugin's calls, max "
                  f"runp / create / start: {waited} ms; shared on its CPU when its start "
                  f"returned: max {max(s.sharing for s in samples)}")
            print(f"[{count:>4}]   after its creation's answer: {calls_line(samples, 'create')}")
            print(f"[{count:>4}]   after its stop's answer: {calls_line(samples, 'stop')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="200,500",
                        type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--runc-update", type=float, default=0.030,
                        help="seconds containerd's NRI lock is held per container updated")
    parser.add_argument("--before", default="", help="an older tree's src directory")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (the plugin writes real cgroups)", file=sys.stderr)
        return 2
    print(f"emulated: sandbox {SANDBOX * 1000:.0f} ms, create work {CREATE_WORK * 1000:.0f} "
          f"ms, runc create {RUNC_CREATE * 1000:.0f} ms, runc start {RUNC_START * 1000:.0f} ms, "
          f"runc update {args.runc_update * 1000:.0f} ms under the lock; "
          f"{args.samples} integer pods per row; ms over the floor's p50 after each p50")
    modes = ["floor", "after"] + (["before"] if args.before else [])
    try:
        with tempfile.TemporaryDirectory(prefix="nri-pace-") as tmp:
            for count in args.shared:
                report(count, {mode: asyncio.run(measure(Path(tmp), count, mode, args))
                               for mode in modes})
    finally:  # the fake containers' cgroups (empty: no task ever joined them)
        for directory in (*CGROUPS.glob("c*/"), CGROUPS):
            directory.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
