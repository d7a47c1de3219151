"""The container's environment as the kubelet builds it: ``env`` values in order, downward-API
``fieldRef`` sources resolved, and the kubelet's ``$(VAR)`` expansion (also used on the command
line)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.daemonset.lab_node import PodFacts
from cpuset_lab.daemonset.manifest import (
    FieldReader,
    ManifestError,
    UntranslatedFieldError,
    as_list,
    as_str,
)

_VAR_REF: Final = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: a defined variable's value, ``$$`` a literal ``$``,
    an undefined reference left as written."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _VAR_REF.sub(one, text)


def environment(reader: FieldReader, value: object, path: str,
                pod: PodFacts) -> list[pb.KeyValue]:
    """Each ``env`` entry in order; values may refer to earlier ones with ``$(NAME)``."""
    envs: list[pb.KeyValue] = []
    for index, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{index}]"
        fields = reader.fields(entry, entry_path, {"name", "value", "valueFrom"})
        name = as_str(fields["name"], f"{entry_path}.name")
        if "valueFrom" in fields:
            resolved = _field_ref(reader, fields["valueFrom"], f"{entry_path}.valueFrom", pod)
        else:
            earlier = {kv.key: kv.value for kv in envs}
            resolved = expand(as_str(fields.get("value", ""), f"{entry_path}.value"), earlier)
        envs.append(pb.KeyValue(key=name, value=resolved))
    return envs


_ANNOTATION_OR_LABEL: Final = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def _field_ref(reader: FieldReader, value: object, path: str, pod: PodFacts) -> str:
    """A downward-API ``fieldRef`` resolved to the value the kubelet would set."""
    value_from = reader.fields(value, path, {"fieldRef"})
    if "fieldRef" not in value_from:
        raise UntranslatedFieldError(path, "only fieldRef sources")
    ref = reader.fields(value_from["fieldRef"], f"{path}.fieldRef", {"fieldPath", "apiVersion"})
    field_path = as_str(ref["fieldPath"], f"{path}.fieldRef.fieldPath")
    simple = {"metadata.name": pod.name, "metadata.namespace": pod.namespace,
              "metadata.uid": pod.uid, "spec.nodeName": pod.node.node_name,
              "status.hostIP": pod.node.node_ip, "status.hostIPs": pod.node.node_ip,
              "status.podIP": pod.pod_ip, "status.podIPs": pod.pod_ip}
    if field_path in simple:
        resolved = simple[field_path]
        if resolved is None:
            raise ManifestError(f"{path}.fieldRef: {field_path} needs the lab's node_ip "
                                f"(or pod_ip without host networking)")
        return resolved
    if match := _ANNOTATION_OR_LABEL.fullmatch(field_path):
        source = pod.labels if match.group(1) == "labels" else pod.annotations
        return source.get(match.group(2), "")
    raise UntranslatedFieldError(f"{path}.fieldRef.fieldPath", f"field path {field_path!r}")
