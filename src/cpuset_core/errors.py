"""The one typed error hierarchy of the core.

Every error carries a stable machine ``reason`` (for metrics, exit codes and tests), structured
fields, and a human message that names the offending value and, for admission errors, the
``namespace/pod/container`` it concerns. Adapters translate these into what their side speaks
(an NRI error string, a CLI exit code); they never parse the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar


class CpusetError(Exception):
    """Base of every error raised by ``cpuset_core``."""

    reason: ClassVar[str] = "error"


class CpuListSyntaxError(CpusetError, ValueError):
    """A text is not a valid Linux CPU list ("0,2-3,8")."""

    reason = "cpu-list-syntax"

    def __init__(self, text: str, position: int, problem: str) -> None:
        self.text = text
        self.position = position
        self.problem = problem
        super().__init__(f"invalid CPU list {text!r}: {problem} at position {position}")


class TopologyError(CpusetError):
    """The machine's topology could not be read or is inconsistent."""

    reason = "topology"


class StalePlanError(CpusetError):
    """A plan was committed against a ledger that changed after the plan was made."""

    reason = "stale-plan"


class AdmissionError(CpusetError):
    """A container cannot be admitted; nothing was changed."""

    reason = "admission"

    def __init__(self, subject: str, detail: str) -> None:
        self.subject = subject
        self.detail = detail
        super().__init__(f"{subject}: {detail}")


class InvalidAnnotationError(AdmissionError):
    """The pin annotation's value is not a valid CPU list."""

    reason = "invalid-annotation"

    def __init__(self, subject: str, key: str, value: str, cause: CpuListSyntaxError) -> None:
        self.key = key
        self.value = value
        super().__init__(subject, f"annotation {key}={value!r} is invalid: {cause.problem} "
                                  f"at position {cause.position}")


class AnnotationValueError(AdmissionError):
    """An annotation of this project's that takes one of a few words has another value."""

    reason = "invalid-annotation"

    def __init__(self, subject: str, key: str, value: str, allowed: Sequence[str]) -> None:
        self.key = key
        self.value = value
        self.allowed = tuple(allowed)
        super().__init__(subject, f"annotation {key}={value!r} is invalid: expected "
                                  f"{' or '.join(repr(a) for a in self.allowed)}")


class AnnotationConflictError(AdmissionError):
    """Two of this project's annotations, each valid, ask one container for opposite things."""

    reason = "invalid-annotation"

    def __init__(self, subject: str, key: str, other: str, why: str) -> None:
        self.key = key
        self.other = other
        super().__init__(subject, f"annotations {key} and {other} are both true: {why}")


class PinNotAllowedError(AdmissionError):
    """The pod's namespace may not use the pin annotation (``pin_namespaces``)."""

    reason = "pin-namespace-not-allowed"

    def __init__(self, subject: str, key: str, namespace: str,
                 allowed: Sequence[str]) -> None:
        self.key = key
        self.namespace = namespace
        self.allowed = tuple(allowed)
        super().__init__(subject, f"namespace {namespace!r} may not use the annotation {key} "
                                  f"(pin_namespaces allows: {', '.join(self.allowed) or 'none'})")


class CpuUnavailableError(AdmissionError):
    """A pinned CPU is offline or does not exist on this machine."""

    reason = "cpu-unavailable"

    def __init__(self, subject: str, key: str, cpus: str, unavailable: str, online: str) -> None:
        self.key = key
        self.cpus = cpus
        self.unavailable = unavailable
        super().__init__(subject, f"annotation {key}={cpus!r} names CPU(s) {unavailable} "
                                  f"that are not online (online: {online})")


class InsufficientCpusError(AdmissionError):
    """Not enough free CPUs for an integer container's exclusive request."""

    reason = "insufficient-cpus"

    def __init__(self, subject: str, requested: int, free: int, *, draining: int = 0) -> None:
        self.requested = requested
        self.free = free
        self.draining = draining
        """CPUs that would be free but for running containers not yet seen leaving them."""
        held = (f"; {draining} more given up by running containers are kept until the kernel "
                f"shows them left (inspect: draining)" if draining else "")
        super().__init__(subject, f"needs {requested} exclusive CPU(s) but only {free} "
                                  f"are free (online minus pinned, exclusive and reserved){held}")


class FullCoresUnavailableError(AdmissionError):
    """``full_physical_cores`` is on and the request cannot be met with whole free cores."""

    reason = "full-cores-unavailable"

    def __init__(self, subject: str, requested: int, detail: str) -> None:
        self.requested = requested
        self.why = detail
        super().__init__(subject, f"needs {requested} exclusive CPU(s) as whole physical cores "
                                  f"(full_physical_cores) but {detail}")


class InsufficientCpusForReassignmentError(AdmissionError):
    """Pinned CPUs are held by integer containers and there is no room to move them."""

    reason = "insufficient-cpus-for-reassignment"

    def __init__(self, subject: str, conflicting: Sequence[str], needed: int, free: int, *,
                 whole_cores: bool = False, why: str = "") -> None:
        self.conflicting = tuple(conflicting)
        self.needed = needed
        self.free = free
        where = " in wholly free cores (full_physical_cores)" if whole_cores else ""
        message = (f"pinned CPUs are held by integer container(s) "
                   f"{', '.join(self.conflicting)}; moving them needs {needed} free CPU(s)"
                   f"{where} but only {free} are free")
        if why:
            # Counts alone can look satisfiable in whole-core mode: say what really blocks it.
            message = (f"pinned CPUs are held by integer container(s) "
                       f"{', '.join(self.conflicting)}, which cannot be moved onto whole cores "
                       f"(full_physical_cores): {why}")
        super().__init__(subject, message)


class AlignmentError(AdmissionError):
    """A strict alignment policy (``restricted``, ``single-numa-node``) cannot be met; the
    kubelet's ``TopologyAffinityError``."""

    reason = "topology-affinity"

    def __init__(self, subject: str, policy: str, requested: int, why: str) -> None:
        self.policy = policy
        self.requested = requested
        self.why = why
        super().__init__(subject, f"{requested} exclusive CPU(s) cannot be aligned under the "
                                  f"{policy} policy ([cpus] alignment): {why}")


class ReservedCpusUnavailableError(AdmissionError):
    """A container asked to run on the reserved CPUs (or its namespace's pods do) and none is
    online; refused under ``unmet_requests = "refuse"``."""

    reason = "reserved-cpus-unavailable"

    def __init__(self, subject: str, why: str, reserved: str) -> None:
        self.why = why
        self.reserved = reserved
        super().__init__(subject, f"{why} asks for the reserved CPUs, and none is online "
                                  f"(reserved: {reserved or 'none'})")


class IsolatedCpusUnavailableError(AdmissionError):
    """A container asked for isolated CPUs (``isolated-cpus``) and too few are free; refused
    under ``unmet_requests = "refuse"``."""

    reason = "isolated-cpus-unavailable"

    def __init__(self, subject: str, key: str, requested: int, free: int,
                 isolated: str) -> None:
        self.key = key
        self.requested = requested
        self.free = free
        self.isolated = isolated
        super().__init__(subject, f"asks for {requested} isolated CPU(s) ({key}), and {free} "
                                  f"of the isolated CPUs ({isolated or 'none'}) are free")


class SharedPoolExhaustedError(AdmissionError):
    """The change would leave no CPU for shared containers."""

    reason = "shared-pool-exhausted"

    def __init__(self, subject: str, detail: str) -> None:
        super().__init__(subject, f"shared CPU pool would be empty: {detail}")


class SharedPoolBelowMinimumError(AdmissionError):
    """The change would shrink the shared pool below the configured minimum."""

    reason = "shared-pool-below-minimum"

    def __init__(self, subject: str, size: int, minimum: int) -> None:
        self.size = size
        self.minimum = minimum
        super().__init__(subject, f"shared CPU pool would shrink to {size} CPU(s), below the "
                                  f"configured minimum of {minimum} (min_shared_pool)")


class NumaResolutionError(AdmissionError):
    """The memory nodes for a pinned CPU set cannot be determined."""

    reason = "numa-resolution"

    def __init__(self, subject: str, cpus: str, detail: str) -> None:
        self.cpus = cpus
        super().__init__(subject, f"cannot determine NUMA memory nodes for CPUs {cpus}: {detail}")


class StartTooLateError(AdmissionError):
    """A container starts after its CPUs were given back for not starting in time
    (:mod:`cpuset_core.starts`); placing it now could overlap whoever took them."""

    reason = "started-too-late"

    def __init__(self, subject: str, why: str) -> None:
        self.why = why
        super().__init__(subject, f"start refused: {why}, so its CPUs were given back; a new "
                                  f"attempt is placed afresh")


class UpdateTransactionError(CpusetError):
    """A batch of live updates could not be applied; the previous cpusets were put back."""

    reason = "update-transaction-failed"

    def __init__(self, subject: str, failed: Sequence[str], detail: str, *,
                 restored: bool = True) -> None:
        self.subject = subject
        self.failed = tuple(failed)
        self.detail = detail
        self.restored = restored
        outcome = "previous cpusets restored" if restored else "previous cpusets NOT all restored"
        super().__init__(f"{subject}: live update of container(s) {', '.join(self.failed)} "
                         f"failed ({detail}); {outcome}")
