"""Quiet CPUs in ``inspect`` and ``explain`` (issue 43): each container's request (its keys,
what they ask) and what became of it (given, with what the node holds on its CPUs; not given,
with why; pending before the daemon's pass), the node's quiet CPUs and its last pass's
problems, in the JSON document and both text views."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cpuset_adapters.quiet.applier import QuietReport
from cpuset_cli import quiet_view, state_view
from cpuset_cli.commands.explain import explain
from cpuset_cli.commands.inspect import inspect
from cpuset_core import CpusetEngine, Settings, quiet_state
from cpuset_core.quiet_request import CRIO_IDLE, CRIO_IRQ
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.unit.cli.status_server import serving
from tests.unit.core.topologies import DUAL_SOCKET
from tests.unit.service.quiet_fakes import QUIET, FakeNode

READ_ONLY = "interrupts: /proc/irq is read-only here"


def placed(why: list[str] | None = None) -> PlacementService:
    """A node with a quiet pod ``dpdk`` (container ``q``) and a plain one (``w``)."""
    service = PlacementService(CpusetEngine(DUAL_SOCKET, Settings()))
    service.quiet.node = FakeNode(why=why or [])
    quiet, web = pod("dpdk", annotations=QUIET), pod("web")
    service.admit(quiet, container("q", quiet, cpu_limit=2))
    service.admit(web, container("w", web, cpu_limit=2))
    return service


def view_of(service: PlacementService, *, applied: bool,
            report: QuietReport | None = None) -> state_view.StateView:
    if applied:
        state = quiet_state(service.ledger.entries.values())
        service.quiet.apply(state, service.engine.topology.online)
    last = report or QuietReport()
    return state_view.decode(state_view.render(state_view.StatusInputs(
        committed=state_view.Committed.of(service.engine), runtime="containerd",
        synchronized=True, quiet_applied=service.quiet.applied,
        quiet_notes=(last.skipped, last.problems), quiet_unmet=service.quiet.unmet,
        quiet_idle_via=last.idle_via)))


def by_id(view: state_view.StateView) -> dict[str, state_view.ContainerView]:
    return {c.id: c for c in view.containers}


def test_a_given_request_says_what_the_node_holds_on_its_cpus() -> None:
    service = placed()
    view = view_of(service, applied=True)
    mine = service.ledger.entries["q"].cpus
    quiet = by_id(view)["q"].quiet
    assert quiet == quiet_view.QuietView(
        keys=[CRIO_IRQ, CRIO_IDLE], asks="interrupts off, idle states over 10 µs off",
        state="given", applied=f"interrupts off {mine}; " + "; ".join(
            f"idle states past 10 µs disabled on {cpu}" for cpu in mine))
    assert by_id(view)["w"].quiet is None
    assert view.quiet.irq_cpus == mine.format()
    assert view.quiet.idle_limits == {str(cpu): 10 for cpu in mine}


def test_a_request_before_the_daemons_pass_is_pending() -> None:
    view = view_of(placed(), applied=False)
    quiet = by_id(view)["q"].quiet
    assert quiet is not None
    assert quiet.state == "pending"
    assert view.quiet == quiet_view.NodeQuietView()


def test_an_unmet_request_says_why_it_was_not_given() -> None:
    quiet = by_id(view_of(placed([READ_ONLY]), applied=True))["q"].quiet
    assert quiet is not None
    assert (quiet.state, quiet.why) == ("not given", READ_ONLY)


def test_a_document_without_quiet_fields_still_decodes() -> None:
    """A daemon of before issue 43's views serves neither field."""
    raw = json.loads(state_view.render(state_view.StatusInputs(
        committed=state_view.Committed.of(placed().engine), runtime="", synchronized=True)))
    del raw["quiet"]
    for c in raw["containers"]:
        del c["quiet"]
    view = state_view.decode(json.dumps(raw).encode())
    assert view.quiet == quiet_view.NodeQuietView()
    assert all(c.quiet is None for c in view.containers)


def test_inspect_shows_each_request_and_the_nodes_quiet_cpus_in_text_and_json(
        tmp_path: Path) -> None:
    service = placed()
    mine = service.ledger.entries["q"].cpus
    view = view_of(service, applied=True, report=QuietReport(
        skipped=["IRQ 26: the kernel keeps its affinity (a write is refused with EIO: a managed "
                 "or fixed vector); left as it is"],
        problems=["governor: CPU 1 cannot run 'ondemand'"]))
    with serving(tmp_path / "status.sock", view) as path:
        text = CliRunner().invoke(inspect, ["--status-socket", str(path)])
        raw = CliRunner().invoke(inspect, ["--status-socket", str(path), "-o", "json"])
    assert text.exit_code == 0, text.output
    assert (f"quiet: ns/dpdk/main: interrupts off, idle states over 10 µs off ({CRIO_IRQ}, "
            f"{CRIO_IDLE}): given") in text.output
    assert (f"quiet CPUs: interrupts off {mine}; idle states past 10 µs disabled on "
            f"{mine.first()}") in text.output
    assert "quiet CPUs skipped: IRQ 26: the kernel keeps its affinity" in text.output
    assert "quiet CPUs problem: governor: CPU 1 cannot run 'ondemand'" in text.output
    document = json.loads(raw.output)
    assert document["quiet"]["irq_cpus"] == mine.format()
    [dpdk] = [c for c in document["containers"] if c["id"] == "q"]
    assert dpdk["quiet"]["state"] == "given"
    assert dpdk["quiet"]["keys"] == [CRIO_IRQ, CRIO_IDLE]


def test_inspect_says_why_a_request_was_not_given(tmp_path: Path) -> None:
    with serving(tmp_path / "status.sock", view_of(placed([READ_ONLY]), applied=True)) as path:
        text = CliRunner().invoke(inspect, ["--status-socket", str(path)])
    assert f"({CRIO_IRQ}, {CRIO_IDLE}): not given: {READ_ONLY}" in text.output


def test_explain_shows_the_request_what_it_got_and_the_nodes_problems(tmp_path: Path) -> None:
    service = placed()
    mine = service.ledger.entries["q"].cpus
    view = view_of(service, applied=True,
                   report=QuietReport(problems=["/x/disable: cannot write '1': Read-only"]))
    with serving(tmp_path / "status.sock", view) as path:
        given = CliRunner().invoke(explain, ["ns/dpdk/main", "--status-socket", str(path)])
        plain = CliRunner().invoke(explain, ["ns/web/main", "--status-socket", str(path)])
    assert given.exit_code == 0, given.output
    assert (f"  quiet: interrupts off, idle states over 10 µs off ({CRIO_IRQ}, {CRIO_IDLE}): "
            f"given\n         interrupts off {mine};") in given.output
    assert "the node's last pass: /x/disable: cannot write '1': Read-only" in given.output
    assert "quiet:" not in plain.output


def test_explain_says_why_not_or_that_the_pass_is_to_come(tmp_path: Path) -> None:
    for service, applied, expected in [
            (placed([READ_ONLY]), True, f": not given\n         why: {READ_ONLY}\n"),
            (placed(), False, ": pending\n         the daemon's next pass over the node's "
                              "files makes it so\n")]:
        with serving(tmp_path / "status.sock", view_of(service, applied=applied)) as path:
            result = CliRunner().invoke(explain, ["ns/dpdk/main", "--status-socket", str(path)])
        assert expected in result.output, result.output



def test_a_bound_carried_by_pm_qos_says_so_in_both_views(tmp_path: Path) -> None:
    """The DaemonSet's pod, without CAP_SYS_ADMIN, carries an idle bound in each CPU's PM QoS
    resume latency: ``inspect`` and ``explain`` say which mechanism did."""
    service = placed()
    mine = service.ledger.entries["q"].cpus
    view = view_of(service, applied=True,
                   report=QuietReport(idle_via=dict.fromkeys(mine, "pm-qos")))
    assert view.quiet.idle_via == {str(cpu): "pm-qos" for cpu in mine}
    with serving(tmp_path / "status.sock", view) as path:
        text = CliRunner().invoke(inspect, ["--status-socket", str(path)])
        given = CliRunner().invoke(explain, ["ns/dpdk/main", "--status-socket", str(path)])
    first = mine.first()
    assert (f"quiet CPUs: interrupts off {mine}; resume latency ≤ 10 µs (PM QoS) on {first}"
            in text.output), text.output
    assert f"resume latency ≤ 10 µs (PM QoS) on {first}" in given.output, given.output
    assert "idle states past" not in given.output


def test_a_bound_no_file_could_carry_says_so() -> None:
    assert quiet_view.idle_bound(0, "3", "none") == "idle bound 0 µs not carried on 3"
    assert quiet_view.idle_bound(0, "3", "") == "idle states past 0 µs disabled on 3"
