"""cpuset_core: decides every container's ``cpuset.cpus`` and ``cpuset.mems`` on one machine.

Standard library only, no I/O, no clock, no environment: the same inputs always give the same
placements. This module is the public, stable API; everything not listed in ``__all__`` (or
``__version__``) is an implementation detail. See ``docs/library.md``.
"""

from cpuset_core._version import __version__ as __version__
from cpuset_core.classify import Classification, QoS, classify, qos_from_cgroup_parent
from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet
from cpuset_core.devices import DeviceLocality
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    AdmissionError,
    AlignmentError,
    AnnotationConflictError,
    AnnotationValueError,
    CpuListSyntaxError,
    CpusetError,
    CpuUnavailableError,
    FullCoresUnavailableError,
    InsufficientCpusError,
    InsufficientCpusForReassignmentError,
    InvalidAnnotationError,
    IsolatedCpusUnavailableError,
    NumaResolutionError,
    PinNotAllowedError,
    ReservedCpusUnavailableError,
    SharedPoolBelowMinimumError,
    SharedPoolExhaustedError,
    StalePlanError,
    StartTooLateError,
    TopologyError,
    UpdateTransactionError,
)
from cpuset_core.invariants import violations
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import ContainerFacts, ContainerUpdate, Kind, Placement, PodFacts
from cpuset_core.plan import Plan
from cpuset_core.policy.alignment import Alignment, AlignmentScope
from cpuset_core.policy.options import AllocationOptions, MemoryBinding, Spanning
from cpuset_core.ports import ContainerUpdater, RuntimeEvents, TopologySource, UpdateOutcome
from cpuset_core.quiet import CpuQuiet, QuietState, quiet_state
from cpuset_core.quiet_request import Quiet
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, LIVE_SETTINGS, Settings
from cpuset_core.starts import (
    RuntimeState,
    StartOutcome,
    StartReport,
    StartVerdict,
    judge_start,
)
from cpuset_core.topology import CpuInfo, Topology
from cpuset_core.transaction import apply_transaction, stage, undo_steps
from cpuset_core.workload import TOGGLES, Requests, Toggle, Unmet

__all__ = [
    "DEFAULT_PIN_ANNOTATION",
    "EMPTY",
    "LIVE_SETTINGS",
    "MAX_ID",
    "TOGGLES",
    "AdmissionError",
    "Alignment",
    "AlignmentError",
    "AlignmentScope",
    "AllocationOptions",
    "AnnotationConflictError",
    "AnnotationValueError",
    "CPUSet",
    "Classification",
    "ContainerFacts",
    "ContainerUpdate",
    "ContainerUpdater",
    "CpuInfo",
    "CpuListSyntaxError",
    "CpuQuiet",
    "CpuUnavailableError",
    "CpusetEngine",
    "CpusetError",
    "DeviceLocality",
    "Entry",
    "FullCoresUnavailableError",
    "InsufficientCpusError",
    "InsufficientCpusForReassignmentError",
    "InvalidAnnotationError",
    "IsolatedCpusUnavailableError",
    "Kind",
    "Ledger",
    "MemoryBinding",
    "NumaResolutionError",
    "PinNotAllowedError",
    "Placement",
    "Plan",
    "PodFacts",
    "QoS",
    "Quiet",
    "QuietState",
    "Requests",
    "ReservedCpusUnavailableError",
    "RuntimeEvents",
    "RuntimeState",
    "Settings",
    "SharedPoolBelowMinimumError",
    "SharedPoolExhaustedError",
    "Spanning",
    "StalePlanError",
    "StartOutcome",
    "StartReport",
    "StartTooLateError",
    "StartVerdict",
    "Toggle",
    "Topology",
    "TopologyError",
    "TopologySource",
    "Unmet",
    "UpdateOutcome",
    "UpdateTransactionError",
    "apply_transaction",
    "classify",
    "judge_start",
    "qos_from_cgroup_parent",
    "quiet_state",
    "stage",
    "undo_steps",
    "violations",
]
