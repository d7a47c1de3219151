"""Pods as ``kubectl get pods -o json`` (or ``-o yaml``) prints them, turned into the core's facts.

Accepted documents: a ``List`` (or ``PodList``) of pods, or a single ``Pod``; JSON or YAML (several
YAML documents separated by ``---`` are read one after the other). From each pod:

* ``metadata``: ``name`` (required), ``namespace`` (default ``default``), ``uid`` and
  ``annotations`` (string values only, as the API server requires);
* ``spec.initContainers`` and ``spec.containers``: ``name``, ``resources.requests`` and
  ``resources.limits`` (``cpu`` and ``memory``; other resources are ignored), and for init
  containers ``restartPolicy: Always`` (a sidecar, which keeps running);
* ``status.qosClass`` when present; otherwise the QoS class is computed like the kubelet.

What the kubelet and the API server do, reproduced here:

* **Defaulting**: a container with a limit but no request for a resource gets the limit as its
  request. A request above its limit is invalid (the API server rejects it).
* **QoS class** (``ComputePodQOS``, over init containers and containers alike, counting only
  ``cpu`` and ``memory`` and ignoring zero quantities): *BestEffort* when no container has any
  request or limit; *Guaranteed* when every container has both a ``cpu`` and a ``memory`` limit
  and the summed requests equal the summed limits for each; else *Burstable*.
* **Quantities** (``resource.Quantity``): a decimal number with an optional suffix — ``n u m k
  M G T P E``, ``Ki Mi Gi Ti Pi Ei`` or an exponent ``e3``/``E-2``; CPU is rounded up to whole
  millicores, memory up to whole bytes; negative values are invalid.
* **cgroup values** (``kuberuntime``, cgroupfs driver): ``cpu.shares = max(2, millis × 1024 /
  1000)`` of the request (2 without one), at most 262144; with a CPU limit, ``quota = max(1000,
  millis × 100000 / 1000)`` and ``period = 100000``; memory limit in bytes. The pod's cgroup
  parent is ``/kubepods/pod<uid>`` (Guaranteed), ``/kubepods/burstable/pod<uid>`` or
  ``/kubepods/besteffort/pod<uid>``, which is how the engine learns the QoS class.

Bad input raises :class:`PodsInputError`, whose one-line message names the file, the pod and the
field, e.g. ``pods.json: items[2] (pod default/web): spec.containers[0].resources.limits.cpu:
"1x" is not a quantity``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Final

from cpuset_adapters.kubelet import CFS_PERIOD, cgroup_parent, cpu_quota, cpu_shares
from cpuset_cli.pod_fields import Fields, PodsInputError, describe
from cpuset_cli.pod_qos import CPU, MEMORY, QOS_RESOURCES, Quantities, compute_qos
from cpuset_cli.pod_quantity import (
    QuantityError,
    cpu_millis,
    format_number,
    memory_bytes,
    parse_quantity,
)
from cpuset_cli.pod_specs import ContainerSpec, PodSpec, Resources
from cpuset_core import ContainerFacts, PodFacts, QoS

_QOS_CLASSES: Final = {q.value: q for q in (QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT)}
_LIST_KINDS: Final = ("List", "PodList")


def load_pods(path: str | Path) -> tuple[PodSpec, ...]:
    """Read a pods file (JSON or YAML); raises :class:`PodsInputError` (or ``OSError``)."""
    import yaml  # noqa: PLC0415 - only `plan --pods` needs it

    source = str(path)
    text = Path(path).read_text(encoding="utf-8")
    documents: list[object]
    if text.lstrip().startswith(("{", "[")):
        try:
            documents = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise PodsInputError(source, None, None, f"not JSON: {exc.msg} at line "
                                                     f"{exc.lineno} column {exc.colno}") from exc
    else:
        try:
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise PodsInputError(source, None, None,
                                 f"not YAML: {problem}{where}") from exc
    if not documents:
        raise PodsInputError(source, None, None, "is empty: expected a List of pods or a Pod")
    pods: list[PodSpec] = []
    for n, document in enumerate(documents):
        where = f"{source} (document {n + 1})" if len(documents) > 1 else source
        pods.extend(parse_pods(document, source=where))
    _check_unique(pods, source)
    return tuple(pods)


def parse_pods(document: object, *, source: str = "<pods>") -> tuple[PodSpec, ...]:
    """Return the pods of one decoded document (a ``List``/``PodList`` or a ``Pod``)."""
    if not isinstance(document, dict):
        raise PodsInputError(source, None, None, f"expected a List of pods or a Pod (an "
                                                 f"object), got {describe(document)}")
    kind = document.get("kind")
    if kind in _LIST_KINDS:
        items = document.get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise PodsInputError(source, None, "items",
                                 f"expected a list of pods, got {describe(items)}")
        pods = tuple(_pod(item, source, f"items[{n}]") for n, item in enumerate(items))
    elif kind == "Pod":
        pods = (_pod(document, source, None),)
    elif kind is None:
        raise PodsInputError(source, None, "kind", "missing: expected \"List\" (what `kubectl "
                                                   "get pods -o json` prints) or \"Pod\"")
    else:
        raise PodsInputError(source, None, "kind", f"{describe(kind)} is not a pod shape "
                                                   f"(expected \"List\", \"PodList\" or \"Pod\")")
    _check_unique(pods, source)
    return pods


def _check_unique(pods: Sequence[PodSpec], source: str) -> None:
    seen: dict[str, str] = {}
    for pod in pods:
        if pod.ref in seen:
            raise PodsInputError(source, pod.label, "metadata.name",
                                 f"pod {pod.ref} appears twice (also {seen[pod.ref]})")
        seen[pod.ref] = pod.label


def _pod(raw: object, source: str, item: str | None) -> PodSpec:
    where = Fields(source, item or "")
    if not isinstance(raw, dict):
        raise where.fail("", f"expected a Pod (an object), got {describe(raw)}")
    kind = raw.get("kind")
    if kind is not None and kind != "Pod":
        raise where.fail("kind", f"{describe(kind)} is not a Pod")
    metadata = where.mapping(raw.get("metadata"), "metadata")
    name = where.string(metadata.get("name"), "metadata.name", required=True)
    namespace = where.string(metadata.get("namespace"), "metadata.namespace") or "default"
    assert name is not None  # required
    label = f"pod {namespace}/{name}" if item is None else f"{item} (pod {namespace}/{name})"
    fields = Fields(source, label)
    uid = fields.string(metadata.get("uid"), "metadata.uid") or f"{namespace}_{name}"
    annotations = _annotations(fields, metadata)
    init, app = _containers(fields, fields.mapping(raw.get("spec"), "spec"))
    qos, qos_from_status = _qos(fields, raw.get("status"), (*init, *app))
    pod = PodFacts(sandbox_id=uid, namespace=namespace, name=name, uid=uid,
                   annotations=annotations, cgroup_parent=cgroup_parent(qos, uid))
    return PodSpec(facts=pod, qos=qos, qos_from_status=qos_from_status,
                   init_containers=tuple(p.spec(pod) for p in init),
                   containers=tuple(p.spec(pod) for p in app), label=label)


def _annotations(fields: Fields, metadata: Mapping[str, object]) -> dict[str, str]:
    annotations = {}
    for key, value in fields.mapping(metadata.get("annotations"), "metadata.annotations").items():
        if not isinstance(value, str):
            raise fields.fail(f"metadata.annotations[{json.dumps(key)}]",
                              f"expected a string, got {describe(value)} (quote it in YAML)")
        annotations[key] = value
    return annotations


def _containers(fields: Fields,
                spec: Mapping[str, object]) -> tuple[list[_Parsed], list[_Parsed]]:
    """The pod's init containers and containers, their names unique across both."""
    if "containers" not in spec:
        raise fields.fail("spec.containers", "missing")
    raw_init = fields.sequence(spec.get("initContainers"), "spec.initContainers")
    raw_app = fields.sequence(spec.get("containers"), "spec.containers")
    if not raw_app:
        raise fields.fail("spec.containers", "is empty: a pod has at least one container")
    init = [_container(fields, c, f"spec.initContainers[{n}]", init=True)
            for n, c in enumerate(raw_init)]
    app = [_container(fields, c, f"spec.containers[{n}]", init=False)
           for n, c in enumerate(raw_app)]
    names: dict[str, str] = {}
    for parsed in (*init, *app):
        if parsed.name in names:
            raise fields.fail(f"{parsed.field}.name", f"container name {parsed.name!r} is "
                                                      f"already used by {names[parsed.name]}")
        names[parsed.name] = parsed.field
    return init, app


def _qos(fields: Fields, raw_status: object,
         containers: Sequence[_Parsed]) -> tuple[QoS, bool]:
    """The pod's QoS class, and whether its ``status.qosClass`` said it (else it is computed
    like the kubelet does)."""
    status = fields.mapping(raw_status, "status")
    qos_class = fields.string(status.get("qosClass"), "status.qosClass")
    if qos_class is None:
        return compute_qos([p.quantities for p in containers]), False
    if qos_class not in _QOS_CLASSES:
        raise fields.fail("status.qosClass", f"{json.dumps(qos_class)} is not one of "
                                             f"{', '.join(_QOS_CLASSES)}")
    return _QOS_CLASSES[qos_class], True

@dataclass(frozen=True, slots=True)
class _Parsed:
    name: str
    field: str
    init: bool
    sidecar: bool
    quantities: Quantities

    def resources(self) -> Resources:
        req, lim = self.quantities.requests, self.quantities.limits

        def get(values: Mapping[str, Fraction], name: str,
                convert: Callable[[Fraction], int]) -> int | None:
            return convert(values[name]) if name in values else None

        return Resources(cpu_request=get(req, CPU, cpu_millis),
                         cpu_limit=get(lim, CPU, cpu_millis),
                         memory_request=get(req, MEMORY, memory_bytes),
                         memory_limit=get(lim, MEMORY, memory_bytes))

    def spec(self, pod: PodFacts) -> ContainerSpec:
        resources = self.resources()
        limit = resources.cpu_limit or None  # a zero limit is no limit
        facts = ContainerFacts(
            id=f"{pod.namespace}/{pod.name}/{self.name}", sandbox_id=pod.sandbox_id,
            name=self.name, cpu_shares=cpu_shares(resources.cpu_request),
            cpu_quota=cpu_quota(limit) if limit else None,
            cpu_period=CFS_PERIOD if limit else None,
            memory_limit=resources.memory_limit or None)
        return ContainerSpec(name=self.name, init=self.init, sidecar=self.sidecar,
                             resources=resources, facts=facts)


def _container(fields: Fields, raw: object, field: str, *, init: bool) -> _Parsed:
    if not isinstance(raw, dict):
        raise fields.fail(field, f"expected a container (an object), got {describe(raw)}")
    name = fields.string(raw.get("name"), f"{field}.name", required=True)
    assert name is not None  # required
    resources = fields.mapping(raw.get("resources"), f"{field}.resources")
    values: dict[str, dict[str, Fraction]] = {}
    for part in ("requests", "limits"):
        given = fields.mapping(resources.get(part), f"{field}.resources.{part}")
        values[part] = {}
        for resource in QOS_RESOURCES:
            if resource in given:
                try:
                    values[part][resource] = parse_quantity(given[resource])
                except QuantityError as exc:
                    raise fields.fail(f"{field}.resources.{part}.{resource}", str(exc)) from exc
    requests, limits = values["requests"], values["limits"]
    for resource, limit in limits.items():
        request = requests.setdefault(resource, limit)  # the API server's defaulting
        if request > limit:
            raise fields.fail(f"{field}.resources.requests.{resource}",
                              f"request {format_number(request)} is above the limit "
                              f"{format_number(limit)}")
    policy = fields.string(raw.get("restartPolicy"), f"{field}.restartPolicy")
    return _Parsed(name=name, field=field, init=init, sidecar=init and policy == "Always",
                   quantities=Quantities(requests, limits))

