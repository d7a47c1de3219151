"""The live state document the daemon serves and ``inspect`` renders.

Built from the core's values (ledger, placements, shared pool) and what the adapters know
(runtime, synchronization, updates the plugin believes each container has). A container
*drifts* when the cpuset the plugin last set or learned for it differs from the ledger's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import cattrs

from cpuset_core import CpusetEngine, Kind

SCHEMA_VERSION = 1


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
    draining: str = ""
    """CPUs running containers gave up but may still run on (a move, a shrink or a
    correction the kernel does not show yet): no exclusive owner gets them until a verifier
    pass shows them left."""
    stats: dict[str, int] = field(default_factory=dict)
    """Counters since start: ``update_containers_calls``, ``updates_sent_in_background``,
    ``updates_on_responses``, ``max_updates_per_container``, ``update_failures``,
    ``drift_repaired`` and ``drift_unrepaired`` (containers synchronizes found off their
    placement and corrected, or could not correct; see ``cpuset_core.drift``)."""


def build(engine: CpusetEngine, *, runtime: str, synchronized: bool,
          known: dict[str, str], pending: frozenset[str],
          history: dict[str, list[str]] | None = None,
          stats: dict[str, int] | None = None,
          kernel_drift: dict[str, str] | None = None) -> StateView:
    """Return the view; ``known`` maps container ids to the cpuset the plugin last set or
    learned for them, ``history`` to what happened to them."""
    ledger = engine.ledger
    pool = engine.shared_pool()
    containers = []
    drift = []
    for cid in sorted(ledger.entries):
        entry = ledger.entries[cid]
        cpus = pool if entry.kind is Kind.SHARED else entry.cpus
        containers.append(ContainerView(
            id=cid, subject=entry.subject, kind=entry.kind.value, cpus=cpus.format(),
            mems=entry.mems.format() if entry.mems is not None else None,
            request=entry.request, reason=entry.reason,
            history=list((history or {}).get(cid, []))))
        if cid in known and known[cid] != cpus.format():
            drift.append(cid)
    return StateView(
        schema=SCHEMA_VERSION, runtime=runtime, synchronized=synchronized,
        online=engine.topology.online.format(), shared_pool=pool.format(), containers=containers,
        pinned={str(cpu): count for cpu, count in sorted(ledger.annot_refs.items())},
        exclusive={str(cpu): owner for cpu, owner in sorted(ledger.int_owner.items())},
        drift=drift, kernel_drift=dict(sorted((kernel_drift or {}).items())),
        pending_updates=sorted(pending), draining=engine.draining.format(),
        stats=dict(stats or {}))


_converter = cattrs.Converter()


def encode(view: StateView) -> bytes:
    return json.dumps(_converter.unstructure(view), indent=2).encode() + b"\n"


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
