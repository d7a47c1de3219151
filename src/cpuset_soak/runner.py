"""The soak's loop: each step's operations run back to back (the always-invariants checked
after each one), then the node settles — the burst's end plus the verifier's period — and the
eventual invariants must hold by then; at the end every pod is deleted and the node must be
empty. A violation stops the run with its report."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Final

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab.kubelet import KubeletClient

from . import faults, hotplug, invariants, kernel, operations, report
from .history import HistoryWriter, Op
from .model import INTEGER, Node
from .node import LabNode

DISPATCH: Final[dict[str, Callable[[Soak, Op], None]]] = {
    "create": operations.create, "delete": operations.delete, "stop": operations.stop,
    "resize": operations.resize, "cri-cpuset": operations.cri_cpuset,
    "oob-write": operations.oob_write, "burst": faults.burst,
    "plugin-kill": faults.plugin_kill, "plugin-sigstop": faults.plugin_sigstop,
    "containerd-restart": faults.containerd_restart, "runc-refuse": faults.runc_refuse,
    "runc-allow": faults.runc_allow, "pin-namespaces": faults.pin_namespaces,
    "status-hammer": faults.status_hammer,
    "cpu-offline": hotplug.cpu_offline, "cpu-online": hotplug.cpu_online,
}
"""Every operation kind a history may hold."""
SAMPLE: Final = 0.3
"""Seconds between two kernel views while the node settles."""


class Violated(Exception):  # noqa: N818 - reads as what happened
    """A step broke an invariant; the report has been printed."""


class Soak:
    def __init__(self, node: LabNode, seed: int, history: HistoryWriter) -> None:
        self.node, self.seed, self.history = node, seed, history
        self.model: Node = node.model
        self.tally = node.tally
        self.lock = threading.RLock()
        self.uids: set[str] = set()
        self.cids: set[str] = set()
        self.recent: deque[str] = deque(maxlen=30)
        self.hammers: list[threading.Thread] = []
        self.step = 0
        self.found: list[str] = []
        self.taken: set[int] = set()
        """CPUs the soak took offline and has not brought back yet."""
        self.offlinable = CPUSet()
        """CPUs it may take offline (``--hotplug``); none: a history's are skipped."""
        self.all_mems = kernel.numa_nodes(self.model.online)

    # -- what operations use ------------------------------------------------------------------

    @property
    def cri(self) -> KubeletClient:
        return self.node.cri

    @property
    def image(self) -> str:
        return self.node.lab.image

    def plugin_answers(self) -> bool:
        return self.node.plugin_up

    def outcome(self, text: str) -> None:
        with self.lock:
            self.recent.append(f"  step {self.step}:   -> {text}")

    def violation(self, text: str) -> None:
        with self.lock:
            self.found.append(text)

    def refresh_integers(self) -> None:
        """Where the integer containers are now (the model predicts pins' moves from it)."""
        with self.lock:
            integers = self.model.of_kind(INTEGER)
        view = kernel.read(integers)
        for container in integers:
            if container.cid in view:
                container.actual = view[container.cid].cpus

    def check_always(self) -> None:
        with self.lock:
            running = list(self.model.running())
        found = self._always(kernel.read(running))
        if found:  # two files read at different moments: confirm on a fresh view
            found = self._always(kernel.read(running))
        self.found.extend(found)

    def _always(self, view: kernel.KernelView) -> list[str]:
        self.tally.checks += 1
        with self.lock:
            return invariants.exclusive_owners(self.model, view)

    # -- the loop -----------------------------------------------------------------------------

    def run(self, steps: Iterable[list[Op]], deadline: float | None) -> None:
        for ops in steps:
            self.step += 1
            for op in ops:
                self.apply(op)
            self.settle()
            if deadline is not None and time.monotonic() > deadline:
                break

    def apply(self, op: Op) -> None:
        kind = op["kind"]
        if kind not in DISPATCH:
            raise ValueError(f"unknown operation kind {kind!r} (known: {sorted(DISPATCH)})")
        at = self.history.write(self.step, op)
        self.recent.append(f"  step {self.step} (+{at:.1f} s): {op}")
        self.tally.ops[kind] += 1
        try:
            DISPATCH[kind](self, op)
        except CriError as err:
            if self.node.plugin_up:
                self.violation(f"{kind} failed on the runtime: {err}")
            self.outcome(f"{kind} failed: {err}")
        self.check_always()
        self._stop_if_violated("during the step")

    def settle(self, extra: float = 0.0) -> None:
        """Wait until the eventual invariants hold, at most the verifier's period twice plus
        a margin after the burst's end; the always-invariants are checked at every view."""
        for thread in self.hammers:
            thread.join()
        self.hammers.clear()
        began = time.monotonic()
        limit = (2 * self.node.verify_period + 4) * self.node.scale
        deadline = began + limit + extra
        while True:
            time.sleep(SAMPLE)
            self.check_always()
            self._stop_if_violated("while settling")
            eventual = self.eventual()
            if not eventual:
                break
            if time.monotonic() > deadline:
                self.found.extend(eventual)
                self._stop_if_violated(f"after settling {limit:g} s")
        self.tally.settles.append(time.monotonic() - began)
        with self.lock:
            self.model.settled()
        self.node.measure()

    def eventual(self) -> list[str]:
        with self.lock:
            running = list(self.model.running())
        view = kernel.read(running)
        self.tally.checks += 1
        with self.lock:
            found = invariants.placements(self.model, view, kernel.numa_nodes, self.all_mems)
            found += invariants.kernel_agrees(self.model, view)
            found += invariants.state_matches(self.model, view, self.node.state())
            known = {c.cid for c in running}
        for pod in list(self.model.pods.values()):
            for listed in self.cri.list_containers(pod.pod_id, state="CONTAINER_RUNNING"):
                if listed.id not in known:
                    found.append(f"{pod.name}/{listed.name} ({listed.id[:12]}) runs, but "
                                 f"the soak never saw it admitted")
        return found

    def finish(self) -> None:
        """Bring every CPU back, delete every pod, settle, and check the node is empty and
        nothing leaked."""
        self.step += 1
        for cpu in sorted(self.taken):
            self.apply({"kind": "cpu-online", "cpu": cpu})
        for name in sorted(self.model.pods):
            self.apply({"kind": "delete", "pod": name})
        self.settle()
        found = invariants.empty_state(self.model, self.node.inspect())
        self.node.lab.cleanup()  # the pod cgroup parents a kubelet would remove
        leftovers = kernel.leftover_cgroups(self.uids, self.cids)
        found += [f"cgroup left behind: {path}" for path in leftovers]
        found += report.descriptor_growth(self.tally.memory)
        self.tally.checks += 1
        self.found.extend(found)
        self._stop_if_violated("at the end")

    def _stop_if_violated(self, when: str) -> None:
        if not self.found:
            return
        self.found = list(dict.fromkeys(self.found))  # one finding, confirmed twice
        self.tally.violations.extend(self.found)
        with self.lock:
            running = list(self.model.running())
        report.violation(self, when, kernel.read(running))
        raise Violated(self.found[0])
