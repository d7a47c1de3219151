"""The CRI messages a pod's container config needs (mounts, security context, ports) carry the
upstream field numbers of k8s.io/cri-api pkg/apis/runtime/v1/api.proto: containerd decodes our
bytes with its own copy of that file, so a wrong number would silently set another field."""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import Descriptor, EnumDescriptor

from cpuset_adapters.cri.proto import cri_pb2 as pb

# Transcribed from upstream api.proto, "name=number" per field we declare.
UPSTREAM = {
    "Int64Value": "value=1",
    "SecurityProfile": "profile_type=1 localhost_ref=2",
    "Capability": "add_capabilities=1 drop_capabilities=2 add_ambient_capabilities=3",
    "Mount": "container_path=1 host_path=2 readonly=3 selinux_relabel=4 propagation=5 "
             "recursive_read_only=8",
    "PortMapping": "protocol=1 container_port=2 host_port=3 host_ip=4",
    "LinuxSandboxSecurityContext": "namespace_options=1 run_as_user=3 readonly_rootfs=4 "
                                   "supplemental_groups=5 privileged=6 run_as_group=8 seccomp=9",
    "LinuxContainerSecurityContext": "capabilities=1 privileged=2 namespace_options=3 "
                                     "run_as_user=5 readonly_rootfs=7 supplemental_groups=8 "
                                     "no_new_privs=11 run_as_group=12 seccomp=15",
    "PodSandboxConfig": "metadata=1 hostname=2 log_directory=3 port_mappings=5 labels=6 "
                        "annotations=7 linux=8",
    "ContainerConfig": "metadata=1 image=2 command=3 args=4 working_dir=5 envs=6 mounts=7 "
                       "labels=9 annotations=10 log_path=11 linux=15",
}
ENUMS = {
    "MountPropagation": "PROPAGATION_PRIVATE=0 PROPAGATION_HOST_TO_CONTAINER=1 "
                        "PROPAGATION_BIDIRECTIONAL=2",
    "Protocol": "TCP=0 UDP=1 SCTP=2",
    "SecurityProfile.ProfileType": "RuntimeDefault=0 Unconfined=1 Localhost=2",
}


def _fields(message: Descriptor) -> str:
    return " ".join(f"{f.name}={f.number}" for f in sorted(message.fields, key=lambda f: f.number))


def _values(enum: EnumDescriptor) -> str:
    return " ".join(f"{v.name}={v.number}" for v in enum.values)


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_message_fields_have_the_upstream_numbers(name: str) -> None:
    assert _fields(pb.DESCRIPTOR.message_types_by_name[name]) == UPSTREAM[name]


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_values_have_the_upstream_numbers(name: str) -> None:
    outer, _, inner = name.partition(".")
    enum = (pb.DESCRIPTOR.message_types_by_name[outer].enum_types_by_name[inner] if inner
            else pb.DESCRIPTOR.enum_types_by_name[outer])
    assert _values(enum) == ENUMS[name]


def test_a_wrong_number_is_noticed() -> None:
    assert _fields(pb.DESCRIPTOR.message_types_by_name["Mount"]) != UPSTREAM["Mount"].replace(
        "readonly=3", "readonly=4")
