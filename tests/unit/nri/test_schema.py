"""The NRI schema has the fact sheet's field numbers and types (§4-§5) and NRI's own package,
service and method names (they travel on the wire; message names do not)."""

from __future__ import annotations

from typing import Any

import pytest

from cpuset_adapters.nri import plugin_service, session, subscription
from cpuset_adapters.nri.handler_port import Event
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.proto import ttrpc_pb2

# Transcribed from the sheet's tables: "name=number type" per field, in field-number order.
# Fields whose message we leave out (see nri.proto's header) are absent on purpose.
NRI = {
    "Empty": "",
    "RegisterPluginRequest": "plugin_name=1 string; plugin_idx=2 string; NRI_version=3 string",
    "ConfigureRequest": "config=1 string; runtime_name=2 string; runtime_version=3 string; "
                        "registration_timeout=4 int64; request_timeout=5 int64; "
                        "NRI_version=6 string",
    "ConfigureResponse": "events=2 int32",
    "SynchronizeRequest": "pods=1 repeated PodSandbox; containers=2 repeated Container; "
                          "more=3 bool",
    "SynchronizeResponse": "update=1 repeated ContainerUpdate; more=2 bool",
    "UpdateContainersRequest": "update=1 repeated ContainerUpdate; "
                               "evict=2 repeated ContainerEviction",
    "UpdateContainersResponse": "failed=1 repeated ContainerUpdate",
    "CreateContainerRequest": "pod=1 PodSandbox; container=2 Container",
    "CreateContainerResponse": "adjust=1 ContainerAdjustment; update=2 repeated ContainerUpdate; "
                               "evict=3 repeated ContainerEviction",
    "UpdateContainerRequest": "pod=1 PodSandbox; container=2 Container; "
                              "linux_resources=3 LinuxResources",
    "UpdateContainerResponse": "update=1 repeated ContainerUpdate; "
                               "evict=2 repeated ContainerEviction",
    "StopContainerRequest": "pod=1 PodSandbox; container=2 Container",
    "StopContainerResponse": "update=1 repeated ContainerUpdate",
    "StateChangeEvent": "event=1 enum Event; pod=2 PodSandbox; container=3 Container",
    "RemoveContainerRequest": "pod=1 PodSandbox; container=2 Container",
    "RunPodSandboxRequest": "pod=1 PodSandbox",
    "PodSandbox": "id=1 string; name=2 string; uid=3 string; namespace=4 string; "
                  "labels=5 map; annotations=6 map; runtime_handler=7 string; "
                  "linux=8 LinuxPodSandbox; pid=9 uint32; ips=10 repeated string",
    "LinuxPodSandbox": "pod_overhead=1 LinuxResources; pod_resources=2 LinuxResources; "
                       "cgroup_parent=3 string; cgroups_path=4 string; "
                       "namespaces=5 repeated LinuxNamespace; resources=6 LinuxResources",
    "Container": "id=1 string; pod_sandbox_id=2 string; name=3 string; "
                 "state=4 enum ContainerState; labels=5 map; annotations=6 map; "
                 "args=7 repeated string; env=8 repeated string; mounts=9 repeated Mount; "
                 "hooks=10 Hooks; linux=11 LinuxContainer; pid=12 uint32; "
                 "rlimits=13 repeated POSIXRlimit; created_at=14 int64; started_at=15 int64; "
                 "finished_at=16 int64; exit_code=17 int32; status_reason=18 string; "
                 "status_message=19 string; CDI_devices=20 repeated CDIDevice; user=21 User; "
                 "image=22 Image",
    "LinuxContainer": "namespaces=1 repeated LinuxNamespace; devices=2 repeated LinuxDevice; "
                      "resources=3 LinuxResources; oom_score_adj=4 OptionalInt; "
                      "cgroups_path=5 string; sysctl=9 map",
    "LinuxResources": "memory=1 LinuxMemory; cpu=2 LinuxCPU; "
                      "hugepage_limits=3 repeated HugepageLimit; blockio_class=4 OptionalString; "
                      "rdt_class=5 OptionalString; unified=6 map; "
                      "devices=7 repeated LinuxDeviceCgroup; pids=8 LinuxPids",
    "LinuxCPU": "shares=1 OptionalUInt64; quota=2 OptionalInt64; period=3 OptionalUInt64; "
                "realtime_runtime=4 OptionalInt64; realtime_period=5 OptionalUInt64; "
                "cpus=6 string; mems=7 string",
    "LinuxMemory": "limit=1 OptionalInt64; reservation=2 OptionalInt64; swap=3 OptionalInt64; "
                   "kernel=4 OptionalInt64; kernel_tcp=5 OptionalInt64; "
                   "swappiness=6 OptionalUInt64; disable_oom_killer=7 OptionalBool; "
                   "use_hierarchy=8 OptionalBool",
    "HugepageLimit": "page_size=1 string; limit=2 uint64",
    "LinuxPids": "limit=1 int64",
    "LinuxDeviceCgroup": "allow=1 bool; type=2 string; major=3 OptionalInt64; "
                         "minor=4 OptionalInt64; access=5 string",
    "ContainerAdjustment": "annotations=2 map; mounts=3 repeated Mount; "
                           "env=4 repeated KeyValue; hooks=5 Hooks; "
                           "linux=6 LinuxContainerAdjustment; rlimits=7 repeated POSIXRlimit; "
                           "CDI_devices=8 repeated CDIDevice; args=9 repeated string",
    "LinuxContainerAdjustment": "devices=1 repeated LinuxDevice; resources=2 LinuxResources; "
                                "cgroups_path=3 string; oom_score_adj=4 OptionalInt; "
                                "namespaces=7 repeated LinuxNamespace; sysctl=8 map; "
                                "memory_policy=12 LinuxMemoryPolicy",
    "ContainerUpdate": "container_id=1 string; linux=2 LinuxContainerUpdate; "
                       "ignore_failure=3 bool",
    "LinuxContainerUpdate": "resources=1 LinuxResources",
    "ContainerEviction": "container_id=1 string; reason=2 string",
    "KeyValue": "key=1 string; value=2 string",
    "LinuxMemoryPolicy": "mode=1 enum MpolMode; nodes=2 string; flags=3 repeated enum MpolFlag",
    "OptionalString": "value=1 string",
    "OptionalInt": "value=1 int64",
    "OptionalInt32": "value=1 int32",
    "OptionalUInt32": "value=1 uint32",
    "OptionalInt64": "value=1 int64",
    "OptionalUInt64": "value=1 uint64",
    "OptionalBool": "value=1 bool",
    "OptionalFileMode": "value=1 uint32",
    "Mount": "destination=1 string; type=2 string; source=3 string; options=4 repeated string",
    "Hooks": "prestart=1 repeated Hook; create_runtime=2 repeated Hook; "
             "create_container=3 repeated Hook; start_container=4 repeated Hook; "
             "poststart=5 repeated Hook; poststop=6 repeated Hook",
    "Hook": "path=1 string; args=2 repeated string; env=3 repeated string; "
            "timeout=4 OptionalInt",
    "LinuxNamespace": "type=1 string; path=2 string",
    "LinuxDevice": "path=1 string; type=2 string; major=3 int64; minor=4 int64; "
                   "file_mode=5 OptionalFileMode; uid=6 OptionalUInt32; gid=7 OptionalUInt32",
    "POSIXRlimit": "type=1 string; hard=2 uint64; soft=3 uint64",
    "CDIDevice": "name=1 string",
    "User": "uid=1 uint32; gid=2 uint32; additional_gids=3 repeated uint32",
    "Image": "name=1 string; digest=2 string; config_digest=3 string",
}

TTRPC = {
    "Request": "service=1 string; method=2 string; payload=3 bytes; timeout_nano=4 int64; "
               "metadata=5 repeated KeyValue",
    "Response": "status=1 Status; payload=2 bytes",
    "KeyValue": "key=1 string; value=2 string",
    "Status": "code=1 int32; message=2 string; details=3 repeated StatusDetail",
    "StatusDetail": "type_url=1 string; value=2 bytes",
}

_SCALARS = {"TYPE_STRING": "string", "TYPE_INT64": "int64", "TYPE_INT32": "int32",
            "TYPE_UINT32": "uint32", "TYPE_UINT64": "uint64", "TYPE_BOOL": "bool",
            "TYPE_BYTES": "bytes"}


def describe(message: Any) -> str:
    fields = []
    for f in sorted(message.DESCRIPTOR.fields, key=lambda f: f.number):
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            kind = "map"
        else:
            if f.message_type is not None:
                kind = f.message_type.name
            elif f.enum_type is not None:
                kind = f"enum {f.enum_type.name}"
            else:
                kind = next(v for k, v in _SCALARS.items() if f.type == getattr(f, k))
            if f.is_repeated:
                kind = f"repeated {kind}"
        fields.append(f"{f.name}={f.number} {kind}")
    return "; ".join(fields)


@pytest.mark.parametrize(("module", "name", "expected"),
                         [(pb, n, e) for n, e in NRI.items()]
                         + [(ttrpc_pb2, n, e) for n, e in TTRPC.items()])
def test_message_fields_match_the_fact_sheet(module: Any, name: str, expected: str) -> None:
    assert describe(getattr(module, name)) == expected


def test_package_and_services_are_nris_own() -> None:
    assert pb.DESCRIPTOR.package == "nri.pkg.api.v1alpha1"
    runtime = pb.DESCRIPTOR.services_by_name["Runtime"]
    plugin = pb.DESCRIPTOR.services_by_name["Plugin"]
    assert runtime.full_name == session.RUNTIME_SERVICE
    assert plugin.full_name == plugin_service.PLUGIN_SERVICE
    assert [m.name for m in runtime.methods] == ["RegisterPlugin", "UpdateContainers"]
    served = set(plugin_service.PluginService(None)._methods)  # type: ignore[arg-type]
    assert served == {m.name for m in plugin.methods}


def test_event_enum_matches_the_proto_and_the_mask_bits() -> None:
    for event in Event:
        assert pb.Event.Value(event.name) == event.value
        assert event.bit == 1 << (event.value - 1)
    assert pb.Event.Value("LAST") == 15
    assert {e.value for e in subscription.SUBSCRIBABLE_EVENTS} == set(range(1, 12))


def test_container_states_are_the_cri_values() -> None:
    assert [pb.ContainerState.Value(n) for n in (
        "CONTAINER_UNKNOWN", "CONTAINER_CREATED", "CONTAINER_PAUSED", "CONTAINER_RUNNING",
        "CONTAINER_STOPPED")] == [0, 1, 2, 3, 4]


def test_a_present_zero_wrapper_is_an_empty_sub_message() -> None:
    # §5.6: LinuxCPU.quota (field 2) present with value 0 -> tag 0x12, length 0
    cpu = pb.LinuxCPU()
    cpu.quota.SetInParent()
    assert cpu.SerializeToString() == bytes.fromhex("1200")
    assert pb.LinuxCPU().SerializeToString() == b""


def test_unknown_fields_survive_a_round_trip() -> None:
    # LinuxContainer.scheduler (11) is left out of our schema: it must not be lost.
    scheduler = bytes.fromhex("5a 02 0801")  # field 11, 2 bytes: {policy: 1}
    decoded = pb.LinuxContainer.FromString(scheduler)
    assert decoded.SerializeToString() == scheduler
