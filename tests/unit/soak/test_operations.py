"""One operation at a time, handed fakes of the parts it touches (``tests/unit/soak/fakes.py``):
what it asks of the runtime and the plugin, what the model then holds, and what it records."""

from __future__ import annotations

import pytest

from cpuset_core import CPUSet
from cpuset_soak import faults, pods, updates
from cpuset_soak.dispatch import DISPATCH
from cpuset_soak.model import INTEGER, SHARED
from cpuset_soak.walk import Walk
from tests.unit.soak.fakes import Fakes
from tests.unit.soak.soak_fixtures import TWO, node_with

EIGHT = CPUSet.parse("0-7")
TOO_FEW = ("rpc error: failed to get NRI adjustment: nri-cpuset: default/p2/app: needs 2 "
           "exclusive CPU(s) but only 1 are free (online minus pinned, exclusive and reserved)")


def _create(fakes: Fakes, pod: str, kind: str, cpus: int = 1) -> None:
    pods.create({"kind": "create", "pod": pod, "type": kind, "cpus": cpus, "handler": "",
                 "namespace": "default"},
                kubelet=fakes.kubelet, model=fakes.model, record=fakes.record,
                checks=fakes.checks, plugin=fakes.plugin, pace=fakes.parts().pace)


def test_a_created_pod_runs_in_the_model_as_the_runtime_started_it() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER)
    assert fakes.kubelet.calls == [("run_pod", "p1"), ("create", "p1/app"), ("start", "p1-app")]
    [container] = fakes.model.node.running()
    assert (container.pod, container.kind, container.cpus, container.cid) == (
        "p1", INTEGER, 1, "p1-app")
    assert fakes.record.found == []
    assert fakes.checks.checked == 1


def test_a_typed_refusal_the_model_allows_is_counted_not_found() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER)
    fakes.kubelet.refuse["p2/app"] = TOO_FEW
    _create(fakes, "p2", INTEGER, cpus=2)
    assert fakes.record.found == []
    assert fakes.record.tally.refusals == {"insufficient-cpus": 1}


def test_a_refusal_without_the_plugins_typed_error_is_a_violation() -> None:
    fakes = Fakes(node_with(TWO))
    fakes.kubelet.refuse["p1/app"] = "context deadline exceeded"
    _create(fakes, "p1", SHARED)
    assert fakes.record.found == ["p1/app (shared) failed without a typed refusal of the plugin: "
                                  "context deadline exceeded"]


def test_what_does_not_fit_but_was_admitted_is_a_violation_unless_the_plugin_was_away() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER, cpus=2)
    assert fakes.record.found == []
    _create(fakes, "p2", INTEGER)
    assert fakes.record.found == ["p2/app (integer x1) was admitted, but it does not fit: the "
                                  "model allows only refusals (insufficient-cpus)"]
    fakes.record.found.clear()
    fakes.plugin.up = False
    _create(fakes, "p3", INTEGER)
    assert fakes.record.found == []
    assert fakes.model.node.pods["p3"].containers["app"].unmanaged


def test_a_container_the_plugins_log_refused_must_not_exist() -> None:
    fakes = Fakes(node_with(TWO))
    fakes.plugin.rejected.add("p1-app")
    _create(fakes, "p1", SHARED)
    assert fakes.record.found == ["p1/app (shared) exists as p1-app, but the plugin refused it "
                                  "(a 'reject' for p1-app in its log)"]


def test_stopping_a_container_stops_it_over_cri_and_releases_its_cpus_in_the_model() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER)
    pods.stop({"kind": "stop", "pod": "p1", "container": "app"},
              kubelet=fakes.kubelet, model=fakes.model, record=fakes.record)
    assert fakes.kubelet.calls[-1] == ("stop", "p1-app")
    assert fakes.model.node.running() == []
    assert fakes.model.node.uncertain == 1  # the CPU may drain until the node settles


def test_a_resize_runc_refuses_is_decided_all_the_same() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER, cpus=2)
    faults.runc_refuse({"kind": "runc-refuse", "pod": "p1", "container": "app"},
                       runtime=fakes.runtime, model=fakes.model, record=fakes.record)
    assert fakes.runtime.refusing == {"p1-app"}
    updates.resize({"kind": "resize", "pod": "p1", "container": "app", "cpus": 1},
                   kubelet=fakes.kubelet, model=fakes.model, record=fakes.record,
                   checks=fakes.checks, plugin=fakes.plugin)
    container = fakes.model.node.pods["p1"].containers["app"]
    assert (container.cpus, container.faulted, fakes.model.node.uncertain) == (1, True, 1)
    assert fakes.record.recent[-1].endswith("p1/app resize 2 -> 1: runc refused it")
    assert fakes.record.tally.faults == {"runc-refuse": 1}


def test_a_killed_plugin_is_restarted_and_the_model_resynchronized() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", INTEGER)
    _create(fakes, "p2", INTEGER)
    fakes.model.node.pods["p2"].containers["app"].kind = SHARED  # as a Synchronize may run it
    faults.plugin_kill({"kind": "plugin-kill"}, plugin=fakes.plugin, model=fakes.model,
                       record=fakes.record)
    assert fakes.plugin.up
    assert fakes.plugin.synchronized == 2
    assert fakes.model.node.pods["p2"].containers["app"].kind == INTEGER  # decided again
    assert fakes.record.tally.faults == {"plugin-kill": 1}


def test_deleting_a_pod_removes_it_and_lets_runc_update_its_containers_again() -> None:
    fakes = Fakes(node_with(TWO))
    _create(fakes, "p1", SHARED)
    fakes.runtime.refusing.add("p1-app")
    pods.delete({"kind": "delete", "pod": "p1"}, kubelet=fakes.kubelet, model=fakes.model,
                record=fakes.record, runtime=fakes.runtime)
    assert fakes.kubelet.calls[-1] == ("delete_pod", "p1")
    assert fakes.model.node.pods == {}
    assert fakes.runtime.refusing == set()


@pytest.mark.parametrize("hotplug", [CPUSet(), CPUSet.parse("1-7")])
def test_every_kind_a_walk_draws_has_an_operation(hotplug: CPUSet) -> None:
    walk = Walk(3, node_with(EIGHT), hotplug=hotplug)
    drawn = {op["kind"] for _ in range(300) for op in walk.step()}
    assert drawn <= set(DISPATCH)
    assert {"create", "burst", "plugin-kill"} <= drawn  # nothing runs: nothing to delete
