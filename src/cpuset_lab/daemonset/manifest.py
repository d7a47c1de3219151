"""Reading the rendered manifests with their paths: the typed readers that name the path of a
value of the wrong kind, the :class:`FieldReader` that refuses every field neither translated nor
allow-listed, and :data:`ALLOWED`, the fields with no effect on one node and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import yaml

Object = Mapping[str, object]


class ManifestError(ValueError):
    """The manifests cannot be translated (a missing object, a value of the wrong kind)."""


class UntranslatedFieldError(ManifestError):
    """A manifest field the translation does not carry over (and no reason says it may go)."""

    def __init__(self, path: str, detail: str = "") -> None:
        super().__init__(f"{path}: not translated to CRI{': ' + detail if detail else ''}")
        self.path = path


def _always(_value: object) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Allowance:
    """Why a field may be left untranslated, and which of its values that holds for."""

    reason: str
    accepts: Callable[[object], bool] = _always


ALLOWED: Final[Mapping[str, Allowance]] = {
    "metadata.labels": Allowance("labels of the DaemonSet object; its pods get the template's"),
    "metadata.annotations": Allowance("annotations of the DaemonSet object, not of its pods"),
    "spec.selector": Allowance("the controller's pod selector (checked to match the template "
                               "labels); the lab makes its one pod itself"),
    "spec.updateStrategy": Allowance("how the controller rolls pods over; the lab replaces its "
                                     "one pod itself"),
    "spec.minReadySeconds": Allowance("rollout pacing of the controller"),
    "spec.revisionHistoryLimit": Allowance("the controller's kept revisions"),
    "spec.template.spec.tolerations": Allowance("taints are matched by the controller; the lab "
                                                "node has none"),
    "spec.template.spec.nodeSelector": Allowance("node choice is the controller's; the lab node "
                                                 "is the node"),
    "spec.template.spec.affinity": Allowance("node choice is the controller's"),
    "spec.template.spec.schedulerName": Allowance("scheduling; no scheduler here"),
    "spec.template.spec.priorityClassName": Allowance(
        "preemption and scheduling priority need a scheduler (system-node-critical still "
        "sets the container's oom_score_adj, as the kubelet does)"),
    "spec.template.spec.serviceAccountName": Allowance("an API identity; no API server"),
    "spec.template.spec.serviceAccount": Allowance("an API identity; no API server"),
    "spec.template.spec.automountServiceAccountToken": Allowance(
        "false: no token volume, so nothing to mount", lambda value: value is False),
    "spec.template.spec.dnsPolicy": Allowance(
        "no cluster DNS: the sandbox keeps the runtime's resolv.conf",
        lambda value: value in ("ClusterFirst", "Default", "ClusterFirstWithHostNet")),
    "spec.template.spec.restartPolicy": Allowance(
        "restarting the container is the lab's loop, not a CRI field",
        lambda value: value == "Always"),
    "spec.template.spec.containers[].imagePullPolicy": Allowance(
        "the lab imports the image into containerd; nothing is pulled",
        lambda value: value in ("IfNotPresent", "Never")),
}
"""Manifest fields with no effect on one node without an API server, with the reason (a path's
list indices written ``[]``); an ``accepts`` test limits the values the reason holds for."""


@dataclass(frozen=True, slots=True)
class NotApplied:
    """An allow-listed manifest field and why it has no effect here."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: not applied: {self.reason}"


# ---- typed values, a wrong kind named by its path --------------------------------------------


def as_mapping(value: object, path: str) -> Object:
    if not isinstance(value, Mapping):
        raise ManifestError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def as_list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        raise ManifestError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def as_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ManifestError(f"{path}: expected a string, got {value!r}")
    return value


def as_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError(f"{path}: expected an integer, got {value!r}")
    return value


def as_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise ManifestError(f"{path}: expected true or false, got {value!r}")
    return value


def as_str_map(value: object, path: str) -> dict[str, str]:
    return {as_str(k, path): as_str(v, f"{path}.{k}") for k, v in as_mapping(value, path).items()}


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


class FieldReader:
    """Walks the manifest, noting allow-listed fields and refusing unknown ones."""

    def __init__(self) -> None:
        self.not_applied: list[NotApplied] = []

    def fields(self, value: object, path: str, translated: set[str]) -> Object:
        """``value`` as a mapping, after checking every key is translated or allow-listed.
        ``path`` is the mapping's own path ("" for the document root)."""
        mapping = as_mapping(value, path or "<root>")
        for key, item in mapping.items():
            if key in translated:
                continue
            full = f"{path}.{key}" if path else key
            allowance = ALLOWED.get(_generic(full))
            if allowance is None or not allowance.accepts(item):
                raise UntranslatedFieldError(full, "" if allowance is None
                                             else f"value {item!r} is not covered by the reason "
                                                  f"{allowance.reason!r}")
            self.not_applied.append(NotApplied(full, allowance.reason))
        return mapping


# ---- objects of the rendered YAML ------------------------------------------------------------


def documents(rendered: str) -> list[Object]:
    """Every non-empty YAML document of ``rendered``, each a mapping."""
    return [as_mapping(doc, "<document>") for doc in yaml.safe_load_all(rendered) if doc]


def find_one(objects: list[Object], kind: str, name: str | None = None) -> Object:
    """The one object of ``kind`` (named ``name`` when given); none or several is an error."""
    found = [o for o in objects if o.get("kind") == kind
             and (name is None or as_mapping(o.get("metadata"), "metadata").get("name") == name)]
    if len(found) != 1:
        raise ManifestError(f"expected one {kind}{f' named {name!r}' if name else ''}, "
                            f"found {len(found)}")
    return found[0]
