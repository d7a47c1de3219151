"""The live state document the daemon serves and ``inspect`` renders.

Built from the core's values (ledger, placements, shared pool) and what the adapters know
(runtime, synchronization, updates the plugin believes each container has). A container
*drifts* when the cpuset the plugin last set or learned for it differs from the ledger's.

The daemon serves it from the event loop that answers the runtime's hooks, so it is made in two
steps: :class:`StatusInputs` is taken at once (references to immutable values, shallow copies:
well under a millisecond at 500 containers), and :func:`render_slices` turns it into the JSON
document a slice of containers at a time, the daemon letting hooks run between slices. A
document built in one go took about 7 ms at 500 containers, a delay for every hook behind it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import cattrs

from cpuset_cli.quiet_view import NodeQuietView, QuietView, container_quiet, node_quiet
from cpuset_core import EMPTY, CPUSet, CpusetEngine, Entry, Ledger, QuietState

SCHEMA_VERSION = 1
SLICE = 50
"""Containers per slice of the document: about 0.3 ms of work each."""


@dataclass(frozen=True, slots=True)
class ContainerView:
    id: str
    subject: str
    kind: str
    cpus: str
    mems: str | None
    request: int
    reason: str
    history: list[str] = field(default_factory=list)
    devices: str = ""
    """The NUMA nodes of its devices (``Entry.near``); "" without a device hint."""
    quiet: QuietView | None = None
    """Its quiet-CPU request and what became of it (``None``: it asked none that counts)."""


@dataclass(frozen=True, slots=True)
class StateView:
    """The document; its JSON (through cattrs) is the wire form (schema in docs/cli.md)."""

    schema: int
    runtime: str
    synchronized: bool
    online: str
    shared_pool: str
    containers: list[ContainerView]
    pinned: dict[str, int] = field(default_factory=dict)
    """CPU → number of annotated containers pinned to it."""
    exclusive: dict[str, str] = field(default_factory=dict)
    """CPU → the integer container that owns it."""
    drift: list[str] = field(default_factory=list)
    """Containers whose last known cpuset differs from the ledger."""
    kernel_drift: dict[str, str] = field(default_factory=dict)
    """Containers the verifier's last pass found off their placement in the kernel's cgroup
    files: container id → what differs and how often its placement was re-sent."""
    pending_updates: list[str] = field(default_factory=list)
    records_lagging: list[str] = field(default_factory=list)
    """Containers the kernel has on their placement whose runtime record (``crictl inspect``)
    still differs: it follows in the background, or on the runtime's next answers where a
    call of the plugin's own could deadlock the runtime (decision 51)."""
    draining: str = ""
    """CPUs running containers gave up but may still run on (a move, a shrink or a
    correction the kernel does not show yet): no exclusive owner gets them until a verifier
    pass shows them left."""
    reserved_pool: str = ""
    """Where containers on the reserved CPUs run (``reserved``): ``[cpus] reserved`` online
    and not isolated; "" when none is (they run on the shared pool)."""
    stats: dict[str, int] = field(default_factory=dict)
    """Counters since start: ``update_containers_calls``, ``updates_sent_in_background``,
    ``updates_on_responses``, ``max_updates_per_container``, ``update_failures``,
    ``drift_repaired`` and ``drift_unrepaired`` (containers synchronizes found off their
    placement and corrected, or could not correct; see ``cpuset_core.drift``)."""
    quiet: NodeQuietView = field(default_factory=NodeQuietView)
    """The node's quiet CPUs as the daemon's last pass left them."""


@dataclass(frozen=True, slots=True)
class Committed:
    """The engine's committed state at one moment: immutable values, taken by reference."""

    ledger: Ledger
    shared_pool: CPUSet
    online: CPUSet
    draining: CPUSet
    reserved_pool: CPUSet = EMPTY

    @classmethod
    def of(cls, engine: CpusetEngine) -> Committed:
        return cls(engine.ledger, engine.shared_pool(), engine.topology.online, engine.draining,
                   engine.reserved_pool())


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusInputs:
    """Everything the document shows, as it was at one moment (see the module's docstring);
    ``known`` maps container ids to the cpuset the plugin last set or learned for them,
    ``history`` to what happened to them."""

    committed: Committed
    runtime: str
    synchronized: bool
    known: Mapping[str, CPUSet] = field(default_factory=dict)
    pending: frozenset[str] = frozenset()
    records: frozenset[str] = frozenset()
    history: Mapping[str, Sequence[str]] = field(default_factory=dict)
    stats: Mapping[str, int] = field(default_factory=dict)
    kernel_drift: Mapping[str, str] = field(default_factory=dict)
    quiet_applied: QuietState | None = None
    """The quiet state the node was last made (``None``: no pass yet, or quiet CPUs off)."""
    quiet_notes: tuple[Sequence[str], Sequence[str]] = ((), ())
    """That pass's skipped files and problems."""
    quiet_unmet: Mapping[str, str] = field(default_factory=dict)
    """Why each container's quiet-CPU request was not given, as its admission found."""
    quiet_idle_via: Mapping[int, str] = field(default_factory=dict)
    """What carried each CPU's idle bound in the last pass (``cpuidle``, ``pm-qos``)."""


def build(engine: CpusetEngine, *, runtime: str, synchronized: bool,
          known: Mapping[str, CPUSet], pending: frozenset[str],
          history: Mapping[str, Sequence[str]] | None = None,
          stats: Mapping[str, int] | None = None,
          kernel_drift: Mapping[str, str] | None = None) -> StateView:
    """The view of ``engine``'s state in one go (tests, ``plan``'s saved states)."""
    return decode(render(StatusInputs(
        committed=Committed.of(engine), runtime=runtime, synchronized=synchronized,
        known=known, pending=pending, history=history or {}, stats=stats or {},
        kernel_drift=kernel_drift or {})))


def render(inputs: StatusInputs) -> bytes:
    """The whole document at once."""
    return b"".join(render_slices(inputs))


def render_slices(inputs: StatusInputs) -> Iterator[bytes]:
    """The document (compact JSON), one piece per :data:`SLICE` containers, then the rest."""
    committed = inputs.committed
    ledger, pool = committed.ledger, committed.shared_pool
    drift: list[str] = []
    yield b'{"containers":['
    ids = sorted(ledger.entries)
    for start in range(0, len(ids), SLICE):
        views = []
        for cid in ids[start:start + SLICE]:
            view, cpus = _container(cid, ledger.entries[cid], pool, committed.reserved_pool,
                                    inputs)
            views.append(view)
            known = inputs.known.get(cid)
            if known is not None and known != cpus:
                drift.append(cid)
        piece = json.dumps(_converter.unstructure(views), separators=(",", ":"))[1:-1]
        yield (b"," if start else b"") + piece.encode()
    rest = {
        "schema": SCHEMA_VERSION, "runtime": inputs.runtime, "synchronized": inputs.synchronized,
        "online": committed.online.format(), "shared_pool": pool.format(),
        "reserved_pool": committed.reserved_pool.format(),
        "pinned": {str(cpu): count for cpu, count in sorted(ledger.annot_refs.items())},
        "exclusive": {str(cpu): owner for cpu, owner in sorted(ledger.int_owner.items())},
        "drift": drift, "kernel_drift": dict(sorted(inputs.kernel_drift.items())),
        "pending_updates": sorted(inputs.pending), "records_lagging": sorted(inputs.records),
        "draining": committed.draining.format(),
        "stats": dict(inputs.stats),
        "quiet": _converter.unstructure(node_quiet(inputs.quiet_applied, *inputs.quiet_notes,
                                                  inputs.quiet_idle_via))}
    yield b"]," + json.dumps(rest, separators=(",", ":"))[1:].encode() + b"\n"


def _container(cid: str, entry: Entry, pool: CPUSet, reserved: CPUSet,
               inputs: StatusInputs) -> tuple[ContainerView, CPUSet]:
    cpus = entry.runs_on(pool, reserved)
    return ContainerView(
        id=cid, subject=entry.subject, kind=entry.label, cpus=cpus.format(),
        mems=entry.mems.format() if entry.mems is not None else None, request=entry.request,
        reason=entry.reason, history=list(inputs.history.get(cid, ())),
        devices=entry.near.format(),
        quiet=container_quiet(cid, entry, inputs.quiet_applied,
                              inputs.quiet_unmet.get(cid, ""), inputs.quiet_idle_via)), cpus


_converter = cattrs.Converter()


def encode(view: StateView) -> bytes:
    return json.dumps(_converter.unstructure(view), separators=(",", ":")).encode() + b"\n"


def decode(data: bytes) -> StateView:
    """Parse a status document; raises ``ValueError`` (incl. ``cattrs`` errors) when it is not
    one this version understands."""
    raw = json.loads(data)
    schema = raw.get("schema") if isinstance(raw, dict) else None
    if schema != SCHEMA_VERSION:
        raise ValueError(f"unsupported status schema {schema!r} (this client reads "
                         f"{SCHEMA_VERSION})")
    try:
        return _converter.structure(raw, StateView)
    except cattrs.BaseValidationError as exc:
        raise ValueError(f"malformed status document: {exc}") from exc
