"""The NodeResourceTopology object built from the engine's state: valid against the upstream
CRD's openAPIV3Schema (with no field the API server would prune), one ``node-<id>`` zone of
type ``Node`` per NUMA node with ``cpu`` and ``memory``, SLIT costs, and the declared policy.

The CRD is reference data outside the repository (``shared/kubernetes/nrt/crd.yaml`` beside a
checkout): these tests read it from there, or from ``NRI_CPUSET_NRT_CRD``, and skip without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cpuset_adapters.kubernetes.topology_object import build_topology_object
from cpuset_core import (
    Alignment,
    AlignmentScope,
    AllocationOptions,
    CpusetEngine,
    Settings,
    Topology,
)
from tests.unit.core.engine_steps import annotated_ctr, integer_ctr
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus

GIB = 1 << 30
REPO = Path(__file__).resolve().parents[3]


def crd_path() -> Path | None:
    named = os.environ.get("NRI_CPUSET_NRT_CRD")
    if named:
        return Path(named)
    for parent in REPO.parents:
        candidate = parent / "shared" / "kubernetes" / "nrt" / "crd.yaml"
        if candidate.is_file():
            return candidate
    return None


def upstream_schema() -> dict[str, Any]:
    path = crd_path()
    if path is None:
        pytest.skip("the upstream NodeResourceTopology CRD is not here (shared/kubernetes/nrt/"
                    "crd.yaml beside the checkout, or NRI_CPUSET_NRT_CRD): reference data the "
                    "project does not copy")
    [crd] = [d for d in yaml.safe_load_all(path.read_text()) if d]
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def pruned(obj: Any, schema: dict[str, Any], at: str = "") -> list[str]:
    """Fields the API server would drop (structural schemas prune unknown fields)."""
    if isinstance(obj, dict) and "properties" in schema:
        unknown = [f"{at}.{key}" for key in obj if key not in schema["properties"]]
        return unknown + [p for key, value in obj.items() if key in schema["properties"]
                          for p in pruned(value, schema["properties"][key], f"{at}.{key}")]
    if isinstance(obj, list) and "items" in schema:
        return [p for n, item in enumerate(obj) for p in pruned(item, schema["items"],
                                                                 f"{at}[{n}]")]
    return []


def published(engine: CpusetEngine, policy: str = "best-effort",
              memory: dict[int, int] | None = None) -> dict[str, Any]:
    return build_topology_object(
        node_name="worker-1", topology=engine.topology, ledger=engine.ledger,
        settings=engine.settings, draining=engine.draining,
        memory={0: 16 * GIB, 1: 8 * GIB} if memory is None else memory, policy=policy)


def resources(obj: dict[str, Any], zone: str) -> dict[str, dict[str, int]]:
    [found] = [z for z in obj["zones"] if z["name"] == zone]
    return {r["name"]: {k: r[k] for k in ("capacity", "allocatable", "available")}
            for r in found["resources"]}


@pytest.mark.parametrize("policy", ["best-effort", "single-numa-node"])
def test_the_object_validates_against_the_upstream_crd_and_loses_no_field(policy: str) -> None:
    schema = upstream_schema()
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0")))
    annotated_ctr(engine, "io", "1-2")
    integer_ctr(engine, "db", 3)
    obj = published(engine, policy)
    jsonschema.validate(obj, schema)
    assert pruned(obj, schema) == []


def test_the_object_of_an_irregular_machine_validates_too() -> None:
    schema = upstream_schema()
    obj = published(CpusetEngine(OFFLINE_ISO), memory={})
    jsonschema.validate(obj, schema)
    assert pruned(obj, schema) == []


def test_the_check_notices_a_wrong_object() -> None:
    schema = upstream_schema()
    obj = published(CpusetEngine(DUAL_SOCKET))
    obj["zones"][0]["resources"][0]["available"] = "eight"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, schema)
    obj["zones"][0]["cost"] = []
    assert pruned(obj, schema) == [".zones[0].cost"]


def test_one_node_zone_per_numa_node_with_cpu_and_memory() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0")))
    annotated_ctr(engine, "io", "1-2")
    obj = published(engine)
    assert obj["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert obj["kind"] == "NodeResourceTopology"
    assert obj["metadata"]["name"] == "worker-1"
    assert [(z["name"], z["type"]) for z in obj["zones"]] == [("node-0", "Node"),
                                                               ("node-1", "Node")]
    assert resources(obj, "node-0") == {
        "cpu": {"capacity": 8, "allocatable": 7, "available": 5},
        "memory": {"capacity": 16 * GIB, "allocatable": 16 * GIB, "available": 16 * GIB}}
    assert resources(obj, "node-1")["cpu"] == {"capacity": 8, "allocatable": 8, "available": 8}


def test_the_attributes_declare_the_policy_and_the_container_scope() -> None:
    for policy in ("best-effort", "single-numa-node"):
        attributes = {a["name"]: a["value"]
                      for a in published(CpusetEngine(DUAL_SOCKET), policy)["attributes"]}
        assert attributes == {"topologyManagerPolicy": policy,
                              "topologyManagerScope": "container"}


@pytest.mark.parametrize(("alignment", "scope", "asked", "declared"), [
    (Alignment.BEST_EFFORT, AlignmentScope.CONTAINER, "single-numa-node", "single-numa-node"),
    (Alignment.NONE, AlignmentScope.POD, "best-effort", "best-effort"),
    (Alignment.RESTRICTED, AlignmentScope.CONTAINER, "best-effort", "restricted"),
    (Alignment.SINGLE_NUMA_NODE, AlignmentScope.POD, "best-effort", "single-numa-node"),
])
def test_a_node_enforcing_a_strict_alignment_declares_it_and_its_scope(
        alignment: Alignment, scope: AlignmentScope, asked: str, declared: str) -> None:
    settings = Settings(allocation=AllocationOptions(alignment=alignment, alignment_scope=scope))
    attributes = {a["name"]: a["value"]
                  for a in published(CpusetEngine(DUAL_SOCKET, settings), asked)["attributes"]}
    assert attributes == {"topologyManagerPolicy": declared,
                          "topologyManagerScope": scope.value}


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="policy must be one of"):
        published(CpusetEngine(DUAL_SOCKET), "restricted")


def test_numa_distances_are_the_zone_costs() -> None:
    obj = published(CpusetEngine(DUAL_SOCKET))  # SLIT: 10 local, 32 remote
    costs = {z["name"]: {c["name"]: c["value"] for c in z["costs"]} for z in obj["zones"]}
    assert costs == {"node-0": {"node-0": 10, "node-1": 32},
                     "node-1": {"node-0": 32, "node-1": 10}}


def test_a_machine_without_distances_has_no_costs() -> None:
    bare = Topology(cpus=DUAL_SOCKET.cpus, online=DUAL_SOCKET.online)  # no SLIT table
    assert all("costs" not in z for z in published(CpusetEngine(bare))["zones"])


def test_a_node_without_memory_shows_none() -> None:
    obj = published(CpusetEngine(DUAL_SOCKET), memory={0: GIB})
    assert resources(obj, "node-1")["memory"] == {"capacity": 0, "allocatable": 0,
                                                  "available": 0}


def test_the_same_state_gives_the_same_object() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "db", 2)
    assert published(engine) == published(engine)
