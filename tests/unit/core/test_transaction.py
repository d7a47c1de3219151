"""Live updates applied all-or-nothing: safe staging, and rollback of every step tried."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from cpuset_adapters.dry_run import DryRunHost, DryRunRuntime
from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import UpdateTransactionError
from cpuset_core.model import ContainerFacts, ContainerUpdate, Kind
from cpuset_core.ports import UpdateOutcome
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION
from cpuset_core.transaction import apply_transaction, stage
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, cpus


def update(cid: str, previous: str, new: str, kind: Kind = Kind.SHARED) -> ContainerUpdate:
    return ContainerUpdate(container_id=cid, subject=f"ns/{cid}/main", kind=kind,
                           cpus=cpus(new), previous_cpus=cpus(previous), reason=f"why {cid}")


def shape(steps: Sequence[Sequence[ContainerUpdate]]) -> list[list[tuple[str, str, str]]]:
    """Steps as (id, previous, new) triples, for readable comparisons."""
    return [[(u.container_id, u.previous_cpus.format(), u.cpus.format()) for u in step]
            for step in steps]


# -- stage -------------------------------------------------------------------------------------


def test_shrinks_come_first_integer_moves_second_and_growth_last() -> None:
    grow = update("g", "0-3", "0-7")
    move = update("i", "8-9", "0-1", Kind.INTEGER)
    shrink = update("s", "0-7", "2-7")
    assert stage([grow, move, shrink]) == ((shrink,), (move,), (grow,))


def test_shrink_and_grow_is_split_into_the_common_part_then_the_new_set() -> None:
    both = update("s", "0-5", "2-7")
    steps = stage([both])
    assert shape(steps) == [[("s", "0-5", "2-5")], [("s", "2-5", "2-7")]]
    for (step,) in steps:
        assert (step.container_id, step.subject, step.kind, step.reason) == (
            "s", "ns/s/main", Kind.SHARED, "why s")


def test_split_steps_invert_back_to_the_original_cpus() -> None:
    first, second = (step[0] for step in stage([update("s", "0-5", "2-7")]))
    assert second.inverse().cpus == cpus("2-5")
    assert first.inverse().cpus == cpus("0-5")


@pytest.mark.parametrize(("previous", "new"), [("0-1", "4-5"), ("0", "1")])
def test_disjoint_shared_update_goes_last_unchanged(previous: str, new: str) -> None:
    disjoint = update("s", previous, new)
    move = update("i", "8", "9", Kind.INTEGER)
    assert stage([disjoint, move]) == ((move,), (disjoint,))


def test_unchanged_shared_set_goes_last() -> None:
    same = update("s", "0-3", "0-3")
    assert stage([same]) == ((same,),)


@pytest.mark.parametrize("kind", [Kind.INTEGER, Kind.ANNOTATED])
def test_non_shared_updates_form_the_middle_step_whatever_their_shape(kind: Kind) -> None:
    shrinking = update("x", "0-3", "0-1", kind)
    growing = update("y", "4", "4-5", kind)
    assert stage([shrinking, growing]) == ((shrinking, growing),)


def test_input_order_is_kept_inside_each_step() -> None:
    updates = [update(c, "0-7", "2-7") for c in ("b", "a", "c")]
    assert stage(updates) == (tuple(updates),)


def test_no_updates_give_no_steps() -> None:
    assert stage([]) == ()


# -- apply_transaction with a DryRunHost ---------------------------------------------------------

BEFORE: Mapping[str, str] = {"s1": "0-7", "s2": "0-7", "i": "8-9", "s3": "10-11"}
AFTER: Mapping[str, str] = {"s1": "2-9", "s2": "2-7", "i": "0-1", "s3": "8-11"}
UPDATES = (
    update("s1", "0-7", "2-9"),            # shrink to 2-7, then grow to 2-9
    update("s2", "0-7", "2-7"),            # pure shrink
    update("i", "8-9", "0-1", Kind.INTEGER),  # move
    update("s3", "10-11", "8-11"),         # pure growth
)
STEP_IDS = [["s1", "s2"], ["i"], ["s1", "s3"]]


def make_host(state: Mapping[str, str] = BEFORE) -> DryRunHost:
    host = DryRunHost(DUAL_SOCKET)
    for cid, text in state.items():
        host.start_unmanaged(ContainerFacts(id=cid, sandbox_id="sb", name=cid, cpus=text))
    return host


def cpus_on(host: DryRunHost) -> dict[str, str]:
    result: dict[str, str] = {}
    for cid, live in host.containers.items():
        assert live.cpus is not None
        result[cid] = live.cpus.format()
    return result


def test_success_applies_every_update_in_three_batches() -> None:
    host = make_host()
    apply_transaction(host, UPDATES, "ns/new/main")
    assert cpus_on(host) == AFTER
    assert [[u.container_id for u in batch] for batch in host.batches] == STEP_IDS


def test_no_shared_container_overlaps_an_integer_one_between_steps() -> None:
    host = make_host()
    apply_transaction(host, UPDATES, "ns/new/main")
    state = {cid: cpus(text) for cid, text in BEFORE.items()}
    for batch in host.batches:
        for u in batch:
            state[u.container_id] = u.cpus
        for cid, held in state.items():
            if cid != "i":
                assert held.isdisjoint(state["i"]), (cid, held, state["i"])


def test_no_updates_touch_nothing() -> None:
    host = make_host()
    apply_transaction(host, (), "ns/new/main")
    assert host.batches == []


@pytest.mark.parametrize(("failing", "failed_batch"), [
    ("s1", ("s1", "s2")), ("s2", ("s1", "s2")), ("i", ("i",)), ("s3", ("s1", "s3")),
])
def test_a_failed_update_restores_every_container_and_names_the_failed_batch(
        failing: str, failed_batch: tuple[str, ...]) -> None:
    host = make_host()
    host.fail_updates_for(failing)
    with pytest.raises(UpdateTransactionError) as caught:
        apply_transaction(host, UPDATES, "ns/new/main")
    assert cpus_on(host) == dict(BEFORE)
    err = caught.value
    assert err.failed == failed_batch
    assert err.restored is True
    assert err.subject == "ns/new/main"
    message = str(err)
    assert message.startswith("ns/new/main: ")
    assert ", ".join(failed_batch) in message
    assert f"injected failure for {failing}" in message
    assert "previous cpusets restored" in message


@dataclass
class RejectingBatches:
    """A ContainerUpdater in front of a DryRunHost that rejects chosen batches (by call number)
    outright: nothing of a rejected batch is applied, and every container in it is named."""

    host: DryRunHost
    reject: frozenset[int]
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        index = len(self.calls)
        self.calls.append(tuple(u.container_id for u in updates))
        if index in self.reject:
            return UpdateOutcome(failed=tuple(u.container_id for u in updates),
                                 detail=f"batch {index} rejected")
        return self.host.apply(updates)


@pytest.mark.parametrize("step", [0, 1, 2])
def test_failure_at_any_step_undoes_the_steps_before_it_newest_first(step: int) -> None:
    host = make_host()
    updater = RejectingBatches(host, frozenset({step}))
    with pytest.raises(UpdateTransactionError) as caught:
        apply_transaction(updater, UPDATES, "ns/new/main")
    assert cpus_on(host) == dict(BEFORE)
    assert caught.value.failed == tuple(STEP_IDS[step])
    assert caught.value.restored
    tried = [tuple(ids) for ids in STEP_IDS[:step + 1]]
    assert updater.calls == tried + tried[::-1]


def test_failed_restore_is_reported_as_not_restored() -> None:
    host = make_host()
    host.fail_updates_for("s1", times=2)  # the first step and its undo both fail
    with pytest.raises(UpdateTransactionError) as caught:
        apply_transaction(host, UPDATES, "ns/new/main")
    err = caught.value
    assert err.restored is False
    assert "NOT all restored" in str(err)
    assert "restoring s1, s2 also failed" in err.detail


def test_failed_restore_leaves_the_containers_it_could_not_restore_and_says_so() -> None:
    host = make_host()
    # Step 2 (the move) fails; its undo works; the undo of step 1 is rejected.
    updater = RejectingBatches(host, frozenset({1, 3}))
    with pytest.raises(UpdateTransactionError) as caught:
        apply_transaction(updater, UPDATES, "ns/new/main")
    assert caught.value.restored is False
    assert caught.value.failed == ("i",)
    assert "restoring s1, s2 also failed" in str(caught.value)
    assert cpus_on(host) == {**BEFORE, "s1": "2-7", "s2": "2-7"}


# -- with the engine ---------------------------------------------------------------------------


def test_failed_reassignment_leaves_the_runtime_and_the_ledger_unchanged() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    host = make_host({})
    runtime = DryRunRuntime(host, engine)
    web, db = pod("web", qos="burstable"), pod("db")
    runtime.create_container(web, container("web", web))
    runtime.create_container(db, container("db", db, cpu_limit=2))
    before_host = cpus_on(host)
    before_ledger = engine.ledger
    assert before_host == {"web": "1-7,9-15", "db": "0,8"}

    host.fail_updates_for("db")
    pin = pod("pin", annotations={DEFAULT_PIN_ANNOTATION: "0"})
    with pytest.raises(UpdateTransactionError) as caught:
        runtime.create_container(pin, container("pin", pin))
    assert caught.value.failed == ("db",)
    assert caught.value.subject == "ns/pin/main"
    assert cpus_on(host) == before_host
    assert engine.ledger is before_ledger
    assert "pin" not in host.containers
    assert CPUSet.parse(before_host["db"]) == engine.ledger.entries["db"].cpus


def test_an_update_that_sets_mems_must_say_what_they_were() -> None:
    with pytest.raises(ValueError, match="previous mems"):
        ContainerUpdate(container_id="pin", subject="ns/pin/main", kind=Kind.ANNOTATED,
                        cpus=cpus("1-2"), previous_cpus=DUAL_SOCKET.online, mems=cpus("0"),
                        previous_mems=None)


def test_rollback_restores_memory_nodes_that_were_unset() -> None:
    """Synchronize writes an unset cpuset.mems as every memory node, so a rollback of its
    correction leaves the container unrestricted again."""
    host = make_host({"pin": "", "other": "0-15"})
    correction = ContainerUpdate(container_id="pin", subject="ns/pin/main", kind=Kind.ANNOTATED,
                                 cpus=cpus("1-2"), previous_cpus=DUAL_SOCKET.online,
                                 mems=cpus("0"), previous_mems=DUAL_SOCKET.nodes_with_memory())
    host.fail_updates_for("other")
    with pytest.raises(UpdateTransactionError):
        apply_transaction(host, [correction, update("other", "0-15", "3-15", Kind.INTEGER)],
                          "synchronize")
    assert host.containers["pin"].mems == cpus("0-1")
