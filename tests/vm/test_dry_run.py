"""The dry run predicts the real kernel: ``nri-cpuset plan --pods FILE --state LIVE`` on the guest's
own sysfs, then the same pods run in the same order through CRI; after every step each running
container's CPUs and memory nodes, read from the kernel, are what the plan said (including the
live moves a pin causes and a rejection)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cpuset_adapters.cri.client import CriError
from cpuset_cli.commands.plan import plan
from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources, guaranteed
from tests.vm import kernel
from tests.vm.runtime import PIN, RESULTS, Guest, Pods, wait_until


@dataclass(frozen=True, slots=True)
class PodSpec:
    namespace: str
    name: str
    container: str
    qos: QosClass
    cpu: str | None = None
    """Request and limit for Guaranteed pods, request only for Burstable ones."""
    pins: str | None = None

    def kubectl(self) -> dict[str, Any]:
        """The pod as ``kubectl get pod -o json`` shows it (the fields ``plan`` reads)."""
        resources: dict[str, Any] = {}
        if self.qos is QosClass.GUARANTEED:
            limits = {"cpu": self.cpu, "memory": "64Mi"}
            resources = {"requests": limits, "limits": limits}
        elif self.cpu is not None:
            resources = {"requests": {"cpu": self.cpu}}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": self.name, "namespace": self.namespace,
                             "annotations": {PIN: self.pins} if self.pins else {}},
                "spec": {"containers": [{"name": self.container, "resources": resources}]}}


# A mixed set for the 8-CPU default shape (web/app, shared, already runs): integer containers of
# 2 and 3 CPUs, a shared one, a pin on one CPU of each NUMA node that lands on both integer
# containers (live moves), and a request that no longer fits.
SCENARIO = (
    PodSpec("shop", "db", "postgres", QosClass.GUARANTEED, cpu="2"),
    PodSpec("shop", "cache", "redis", QosClass.GUARANTEED, cpu="3"),
    PodSpec("shop", "exporter", "exporter", QosClass.BURSTABLE, cpu="250m"),
    PodSpec("storage", "io", "io", QosClass.BEST_EFFORT, pins="0,4"),
    PodSpec("shop", "batch", "job", QosClass.GUARANTEED, cpu="4"),
)


def dry_run(tmp_path: Path, live: dict[str, Any]) -> dict[str, Any]:
    pods_file, state_file = tmp_path / "pods.json", tmp_path / "live.json"
    pods_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                     "items": [spec.kubectl() for spec in SCENARIO]}))
    state_file.write_text(json.dumps(live))
    result = CliRunner().invoke(plan, ["--pods", str(pods_file), "--state", str(state_file),
                                       "--sysfs-root", "/sys", "--config",
                                       str(RESULTS / "plugin.toml"), "-o", "json"])
    assert result.exit_code in (0, 3), result.output
    document: dict[str, Any] = json.loads(result.stdout)
    (RESULTS / "dry-run-plan.json").write_text(json.dumps(document, indent=2))
    assert not document["state_problems"], document["state_problems"]
    return document


def run(pods: Pods, spec: PodSpec) -> str:
    pod_id = pods.pod(spec.name, spec.qos, pins=spec.pins, namespace=spec.namespace)
    if spec.qos is QosClass.GUARANTEED:
        resources = guaranteed(spec.cpu or "0", "64Mi")
    else:
        resources = container_resources(cpu_request=spec.cpu)
    return pods.container(pod_id, spec.container, resources)


class Prediction:
    """Where the plan says every running container is after the steps applied so far."""

    def __init__(self, live: dict[str, Any]) -> None:
        self.pool = CPUSet.parse(live["shared_pool"])
        self.kinds = {c["subject"]: c["kind"] for c in live["containers"]}
        self.cpus = {c["subject"]: CPUSet.parse(c["cpus"]) for c in live["containers"]}
        self.mems: dict[str, CPUSet] = {}

    def apply(self, subject: str, step: dict[str, Any]) -> None:
        self.kinds[subject] = step["kind"]
        self.cpus[subject] = CPUSet.parse(step["cpus"])
        if step["mems"] is not None:
            self.mems[subject] = CPUSet.parse(step["mems"])
        for move in step["moves"]:
            self.cpus[move["container"]] = CPUSet.parse(move["cpus"])
        if step["shared_pool"] is not None:
            self.pool = CPUSet.parse(step["shared_pool"]["after"], allow_empty=True)

    def differences(self, guest: Guest, ids: dict[str, str]) -> list[str]:
        """Each container whose kernel placement is not the predicted one."""
        found = []
        for subject, cid in ids.items():
            cpus = self.pool if self.kinds[subject] == "shared" else self.cpus[subject]
            mems = self.mems.get(subject, kernel.memory_nodes())
            where = kernel.placement(guest.cri, cid)
            if (where.cpus, where.mems) != (cpus, mems):
                found.append(f"{subject}: the kernel has cpus {where.cpus} mems {where.mems}, "
                             f"the plan {cpus} mems {mems}")
        return found


def test_every_placement_the_dry_run_predicts_is_what_the_kernel_enforces(
        guest: Guest, pods: Pods, tmp_path: Path) -> None:
    live = guest.state()
    document = dry_run(tmp_path, live)
    steps = document["steps"]
    assert [s["action"] for s in steps] == ["create"] * len(SCENARIO)
    assert document["rejected"] >= 1, "the scenario must include a rejection"
    assert any(s["moves"] for s in steps), "the scenario must include live moves"
    prediction = Prediction(live)
    ids = {c["subject"]: c["id"] for c in live["containers"]}
    for spec, step in zip(SCENARIO, steps, strict=True):
        subject = f"{spec.namespace}/{spec.name}/{spec.container}"
        if step["rejected"] is not None:
            with pytest.raises(CriError) as refused:
                run(pods, spec)
            assert step["rejected"]["message"] in refused.value.details
            continue
        ids[subject] = run(pods, spec)
        prediction.apply(subject, step)
        what = f"the kernel to match the plan after step {step['step']} ({subject})"
        wait_until(lambda: not prediction.differences(guest, ids),
                   lambda: f"{what}:\n  " + "\n  ".join(  # noqa: B023 - called at once
                       prediction.differences(guest, ids)), 30)
