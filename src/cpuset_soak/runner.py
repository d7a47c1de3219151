"""The soak's loop: each step's operations run back to back (the always-invariants checked
after each one), then the node settles — the burst's end plus the verifier's period — and the
eventual invariants must hold by then; at the end every pod is deleted and the node must be
empty. A violation stops the run with its report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet

from . import invariants, kernel, lifetimes, report
from .dispatch import DISPATCH, Parts
from .history import HistoryWriter, Op
from .hotplug import Offlining
from .model import CREATED, INTEGER, MIXED
from .node import LabNode
from .parts import Model
from .quiet_watch import QuietWatch
from .record import Record

SAMPLE: Final = 0.3
"""Seconds between two kernel views while the node settles."""


class Violated(Exception):  # noqa: N818 - reads as what happened
    """A step broke an invariant; the report has been printed."""


class Beside:
    """Work beside the next operations (``parts.Background``): threads the runner waits for
    before a step settles."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def start(self, work: Callable[[], None]) -> None:
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join()
        self.threads.clear()


class Soak:
    """Runs steps of operations on ``node``, each handed its parts (``dispatch``), and checks
    the kernel between them (``parts.Checks``) against ``model``; ``record`` keeps what
    happened, ``history`` every operation as it starts."""

    def __init__(self, node: LabNode, model: Model, record: Record,
                 history: HistoryWriter, *, seed: int, cpus: Offlining,
                 quiet: QuietWatch | None = None) -> None:
        self.node, self.model, self.record, self.history = node, model, record, history
        self.seed = seed
        self.quiet = quiet
        """The host's quiet-CPU files, checked after settling (None: quiet CPUs not walked)."""
        self.beside = Beside()
        self.all_mems = kernel.numa_nodes(model.node.online)
        self.parts = Parts(kubelet=node.kubelet, model=model, record=record, checks=self,
                           plugin=node.plugin, runtime=node.runtime, pace=node.pace,
                           background=self.beside, cpus=cpus)

    # -- the kernel between operations (parts.Checks) -----------------------------------------

    def refresh_integers(self) -> None:
        """Where integer containers run (the kernel), or, created and not started, what they
        hold (the plugin's state document: they have no cgroup yet); what mixed ones own (the
        document: the kernel shows their CPUs with the pool's)."""
        with self.model.lock:
            integers = self.model.node.of_kind(INTEGER)
            mixed = self.model.node.of_kind(MIXED)
        if mixed and self.node.plugin.up:
            document = self.node.plugin.state()
            for container in mixed:
                container.actual = lifetimes.owned(document, container.cid)
        view = kernel.read(integers)
        for container in integers:
            if container.cid in view:
                container.actual = view[container.cid].cpus
        waiting = [c for c in integers if c.cid not in view and c.state == CREATED]
        if waiting and self.node.plugin.up:
            state = self.node.plugin.state()
            for container in waiting:
                container.actual = lifetimes.given(state, container.cid) or container.actual

    def check_always(self) -> None:
        with self.model.lock:
            running = list(self.model.node.running())
        found = self._always(kernel.read(running))
        if found:  # two files read at different moments: confirm on a fresh view
            found = self._always(kernel.read(running))
        self.record.found.extend(found)

    def _always(self, view: kernel.KernelView) -> list[str]:
        self.record.tally.checks += 1
        with self.model.lock:
            return invariants.exclusive_owners(self.model.node, view)

    # -- the loop -----------------------------------------------------------------------------

    def run(self, steps: Iterable[list[Op]], deadline: float | None) -> None:
        for ops in steps:
            self.record.step += 1
            for op in ops:
                self.apply(op)
            self.settle()
            if deadline is not None and time.monotonic() > deadline:
                break

    def apply(self, op: Op) -> None:
        kind = op["kind"]
        if kind not in DISPATCH:
            raise ValueError(f"unknown operation kind {kind!r} (known: {sorted(DISPATCH)})")
        self.record.began(op, self.history.write(self.record.step, op))
        try:
            DISPATCH[kind](self.parts, op)
        except CriError as err:
            if self.node.plugin.up:
                self.record.violation(f"{kind} failed on the runtime: {err}")
            self.record.outcome(f"{kind} failed: {err}")
        self.check_always()
        self._stop_if_violated("during the step")

    def settle(self, extra: float = 0.0) -> None:
        """Wait until the eventual invariants hold, at most the verifier's period twice plus
        a margin after the burst's end — and after the end of a created container's grace,
        when it is near (``lifetimes.undecided``); the always-invariants are checked at
        every view."""
        self.beside.join()
        began = time.monotonic()
        limit = (2 * self.node.verify_period + 4) * self.node.pace.scale
        deadline = began + limit + extra
        while True:
            time.sleep(SAMPLE)
            self.check_always()
            self._stop_if_violated("while settling")
            eventual = self.eventual()
            if not eventual:
                break
            with self.model.lock:
                deadline = max(deadline, lifetimes.decided_by(self.model.node) + limit)
            if time.monotonic() > deadline:
                self.record.found.extend(eventual)
                self._stop_if_violated(f"after settling {limit:g} s")
        self.record.tally.settles.append(time.monotonic() - began)
        draining = self.draining()
        with self.model.lock:
            self.model.node.settled(draining)
        self.record.tally.memory.append(self.node.plugin.measure())

    def draining(self) -> CPUSet:
        """What the plugin's state document lists as draining: a running container gave it
        up, and no exclusive owner gets it until the verifier sees the container left it."""
        said = self.node.plugin.state().get("draining") or ""
        return CPUSet.parse(str(said), allow_empty=True)

    def eventual(self) -> list[str]:
        model = self.model.node
        with self.model.lock:
            lifetimes.expire(model)
            undecided = lifetimes.undecided(model)
            running, waiting = list(model.running()), model.created()
        if undecided:  # the plugin may hold them or not: wait until it must have decided
            return [f"{c.pod}/{c.name} ({c.cid[:12]}): created "
                    f"{lifetimes.age(model, c):.1f} s ago, near its start grace's end"
                    for c in undecided]
        view = kernel.read(running)
        state = self.node.plugin.state()
        listed = self.node.kubelet.list_containers()
        self.record.tally.checks += 1
        with self.model.lock:
            for container in waiting:  # a pin arriving may have moved it
                container.actual = lifetimes.given(state, container.cid) or container.actual
            for container in model.of_kind(MIXED):
                container.actual = lifetimes.owned(state, container.cid)
            held = CPUSet.union_of(c.actual for c in waiting if c.kind == INTEGER)
            grace = model.grace
            found = invariants.not_running_holders(state, listed, now=time.time(),
                                                   grace_ends=grace.seconds + grace.slack)
            found += invariants.given_back(model, view, held)
            found += invariants.placements(model, view, kernel.numa_nodes, self.all_mems,
                                           held)
            found += invariants.kernel_agrees(model, view)
            found += invariants.state_matches(model, view, state, waiting)
            if self.quiet is not None:
                self.record.tally.quiet_checks += 1
                found += self.quiet.check(model, {cid: seen.cpus for cid, seen in view.items()})
            known = {c.cid for c in running}
            ours = {pod.pod_id: pod.name for pod in model.pods.values()}
        found += [f"{ours[c.pod_id]}/{c.name} ({c.id[:12]}) runs, but the soak never saw it "
                  f"admitted" for c in listed if c.state == "CONTAINER_RUNNING"
                  and c.pod_id in ours and c.id not in known]
        return found

    def finish(self) -> None:
        """Bring every CPU back, delete every pod, settle, and check the node is empty and
        nothing leaked."""
        self.record.step += 1
        for cpu in sorted(self.parts.cpus.taken):
            self.apply({"kind": "cpu-online", "cpu": cpu})
        for name in sorted(self.model.node.pods):
            self.apply({"kind": "delete", "pod": name})
        self.settle()
        found = invariants.empty_state(self.model.node, self.node.plugin.inspect())
        if self.quiet is not None:  # every pod gone: the host as it was before the walk
            self.record.tally.quiet_checks += 1
            found += self.quiet.left_changed()
        self.node.lab.cleanup()  # the pod cgroup parents a kubelet would remove
        kubelet = self.node.kubelet
        leftovers = kernel.leftover_cgroups(kubelet.uids, kubelet.cids)
        found += [f"cgroup left behind: {path}" for path in leftovers]
        found += report.descriptor_growth(self.record.tally.memory)
        self.record.tally.checks += 1
        self.record.found.extend(found)
        self._stop_if_violated("at the end")

    def _stop_if_violated(self, when: str) -> None:
        record = self.record
        if not record.found:
            return
        record.found = list(dict.fromkeys(record.found))  # one finding, confirmed twice
        record.tally.violations.extend(record.found)
        with self.model.lock:
            running = list(self.model.node.running())
        report.violation(record, self.model.node, when, kernel.read(running), seed=self.seed,
                         history=self.node.workdir / "history.jsonl")
        raise Violated(record.found[0])
