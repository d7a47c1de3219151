"""A write the kernel refuses is always re-sent through the runtime, even where the runtime's
record already says the target: the record is not what the kernel holds (the kernel took an
earlier change whose record lags, then refused the write back). The verifier is the net for
what the kernel holds behind everyone's back. No clock: the tests wait for conditions with one
generous hang guard."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from cpuset_core import CPUSet
from cpuset_core.verify import Observed
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import cpus_of
from tests.unit.service.fast_path import FakeKernel, sent_until_settled, with_kernel

WEB = "id-app-0123456789"


def _web_shrunk_in_the_kernel_only(kernel: FakeKernel, *, may_send_records: bool,
                                   ) -> tuple[PlacementService, Callable[[], None],
                                              Callable[[], object]]:
    """web created on 0-15 (its record); pg shrinks it in the kernel only (the record lags);
    then the kernel refuses web. Returns the service, pg's removal and pg's stop."""
    handler, service = with_kernel(kernel)
    service.pusher.may_send_records = lambda: may_send_records
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    assert kernel.cpus == {WEB: "1-7,9-15"}
    assert service.pusher.record_pending() == {WEB}  # its record still says 0-15
    kernel.refuse = frozenset({WEB})
    return (service, lambda: handler.on_remove_container(db, pg),
            lambda: handler.on_stop_container(db, pg))


@pytest.mark.parametrize("may_send_records", [True, False],
                         ids=["records-in-calls", "records-on-answers-only"])
def test_growth_the_kernel_refuses_is_sent_even_where_the_record_already_has_it(
        may_send_records: bool) -> None:
    """Decision 51 allows a call of the plugin's own for what the kernel refused: nothing
    else would apply it, and the record being right does not make the kernel right."""
    kernel = FakeKernel()
    service, remove_pg, _ = _web_shrunk_in_the_kernel_only(
        kernel, may_send_records=may_send_records)
    sent = sent_until_settled(service, remove_pg)
    assert sent == [f"{WEB}=0-15"]
    assert kernel.cpus == {WEB: "1-7,9-15"}  # the runtime's update is what brings it back
    assert service.pusher.record_pending() == frozenset()
    assert service.pusher.known()[WEB].format() == "0-15"


def test_growth_the_kernel_refuses_at_a_stop_rides_on_its_answer_even_where_the_record_has_it(
        ) -> None:
    kernel = FakeKernel()
    service, _, stop_pg = _web_shrunk_in_the_kernel_only(kernel, may_send_records=False)
    updates = stop_pg()
    assert isinstance(updates, Sequence)
    assert cpus_of(updates) == {WEB: "0-15"}
    assert service.pusher.pending() == frozenset()
    assert service.pusher.record_pending() == frozenset()


def test_without_the_fast_path_a_container_already_on_its_target_is_not_sent_again() -> None:
    """The runtime writes the kernel there: a record on the target means a kernel on it."""
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    service.pusher.kernel.enabled = False
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    sent = sent_until_settled(service, lambda: service.pusher.mark_dirty([WEB]))
    assert sent == []


def test_the_verifier_resends_a_container_the_kernel_holds_elsewhere_while_its_record_is_right(
        ) -> None:
    """Changed out of band (or a refusal left it so): the verifier finds it, the kernel
    refuses the repair again, and it goes through the runtime although its record is right."""
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    assert service.pusher.known()[WEB].format() == "0-15"  # its record, from its answer
    kernel.refuse = frozenset({WEB})
    verifier = Verifier(service)
    seen = {WEB: Observed(cpus=CPUSet.parse("2-5"), mems=CPUSet([0, 1]))}
    verdict = verifier.verify(seen, read_from=service.ledger)
    assert [(m.container_id, m.cause) for m in verdict.found] == [(WEB, "cpus")]
    assert sent_until_settled(service, lambda: None) == [f"{WEB}=0-15"]
