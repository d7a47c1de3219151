"""What a workload asks of its CPUs beyond its QoS: this project's per-container annotations.

Each request is a yes/no *toggle* a pod sets for every container
(``<feature>.nri-cpuset.io/pod``) or for one (``<feature>.nri-cpuset.io/container.NAME``, over
the pod's), with the value ``"true"`` or ``"false"``: the shape seed 004's policy uses, under
this project's own domain, so that a node running both never reads one annotation two ways
(docs/decisions.md, 45). Anything but those two words is refused, on the node as at the API
server, in the same words (:class:`AnnotationValueError`).

* ``reserved-cpus`` — run on the operator's reserved CPUs (``true``; taken from others, so only
  namespaces that may pin may ask), or never, even in a namespace whose pods run there
  (``false``);
* ``shared-cpus`` — an integer container runs on the shared pool instead of exclusive CPUs;
* ``mixed-cpus`` — a Guaranteed container with a fractional CPU limit of at least one CPU gets
  the whole part as exclusive CPUs and runs on the shared pool as well;
* ``isolated-cpus`` — an integer (or mixed) container's exclusive CPUs are isolated ones
  (``isolcpus``: no scheduler balancing, no other task; taken from others, so only namespaces
  that may pin may ask), or never are, even where ``exclusive_on_isolated`` allows them
  (``false``);
* ``device-hints`` — ``false``: its exclusive CPUs ignore where its devices are
  (:mod:`cpuset_core.devices`);
* ``quiet-irqs``, ``quiet-idle`` — interrupts off its exclusive CPUs, and their idle states
  past polling disabled, while it runs (:mod:`cpuset_core.quiet`, with CRI-O's words for the
  same; gated like a pin).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cpuset_core.errors import AnnotationConflictError, AnnotationValueError

DOMAIN: Final = "nri-cpuset.io"
VALUES: Final = ("true", "false")


@dataclass(frozen=True, slots=True)
class Toggle:
    """One yes/no request, resolved per container over per pod."""

    feature: str

    @property
    def pod_key(self) -> str:
        return f"{self.feature}.{DOMAIN}/pod"

    @property
    def container_prefix(self) -> str:
        return f"{self.feature}.{DOMAIN}/container."

    def keys(self, container: str) -> tuple[str, str]:
        """The keys that decide it for ``container``, the one that wins first."""
        return self.container_prefix + container, self.pod_key

    def owns(self, key: str) -> bool:
        """Whether ``key`` is one of this toggle's annotations (the pod's or a container's)."""
        return key == self.pod_key or (key.startswith(self.container_prefix)
                                       and len(key) > len(self.container_prefix))

    def resolve(self, annotations: Mapping[str, str], container: str,
                subject: str) -> tuple[bool, str] | None:
        """The container's answer and the key that gave it; ``None`` when neither key is set.
        Raises :class:`AnnotationValueError` naming the key whose value is not a toggle's,
        the pod's too when the container's own key decides: a malformed annotation is bad
        input whoever it would have applied to, and the admission policy refuses the pod for
        it, so the node must not accept what the API server would refuse."""
        answer: tuple[bool, str] | None = None
        for key in self.keys(container):
            value = annotations.get(key)
            if value is None:
                continue
            if value not in VALUES:
                raise AnnotationValueError(subject, key, value, VALUES)
            if answer is None:
                answer = value == "true", key
        return answer


RESERVED: Final = Toggle("reserved-cpus")
SHARED: Final = Toggle("shared-cpus")
MIXED: Final = Toggle("mixed-cpus")
ISOLATED: Final = Toggle("isolated-cpus")
DEVICE_HINTS: Final = Toggle("device-hints")
QUIET_IRQS: Final = Toggle("quiet-irqs")
QUIET_IDLE: Final = Toggle("quiet-idle")
TOGGLES: Final = (RESERVED, SHARED, MIXED, ISOLATED, DEVICE_HINTS, QUIET_IRQS, QUIET_IDLE)
"""Every annotation of this project's, in the order the operations table lists them."""


def toggle_of(key: str) -> Toggle | None:
    """The toggle ``key`` belongs to, if any."""
    return next((toggle for toggle in TOGGLES if toggle.owns(key)), None)


class Unmet(enum.Enum):
    """What happens to a request the node cannot meet (no reserved CPU online, no room for a
    mixed container's exclusive part): the kubelet's words for the same choice."""

    BEST_EFFORT = "best-effort"
    """Placed as it would be without the request; its reason (log, ``explain``) says why."""
    REFUSE = "refuse"
    """Its creation fails with an error naming the request and why it cannot be met."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Requests:
    """One container's resolved requests (``None``: it did not say)."""

    reserved: tuple[bool, str] | None = None
    shared: tuple[bool, str] | None = None
    mixed: tuple[bool, str] | None = None
    isolated: tuple[bool, str] | None = None

    @classmethod
    def of(cls, annotations: Mapping[str, str], container: str, subject: str) -> Requests:
        """Resolve every request of ``container``. Raises :class:`AnnotationValueError` for a
        value that is not a toggle's, and :class:`AnnotationConflictError` when it asks for
        both the shared pool only and exclusive CPUs beside it."""
        requests = cls(reserved=RESERVED.resolve(annotations, container, subject),
                       shared=SHARED.resolve(annotations, container, subject),
                       mixed=MIXED.resolve(annotations, container, subject),
                       isolated=ISOLATED.resolve(annotations, container, subject))
        shared, mixed = requests.shared, requests.mixed
        if shared is not None and shared[0] and mixed is not None and mixed[0]:
            raise AnnotationConflictError(subject, shared[1], mixed[1],
                                          "exclusive CPUs beside the shared pool cannot be "
                                          "both declined and asked for")
        return requests

    @staticmethod
    def wants(answer: tuple[bool, str] | None) -> bool:
        return answer is not None and answer[0]
