"""Log configuration: JSON lines that parse, decision events (an event name plus fields) with all
their fields, console lines of the event name and ``key=value`` fields, each written once, and
the SIGUSR1 debug toggle."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator, Sequence

import pytest

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.handler_port import HandlerError
from cpuset_adapters.observability.logging import configure_logging
from cpuset_core import ContainerUpdate, CpusetEngine
from cpuset_service.events import FIELDS
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def decide_a_few_things() -> None:
    """An admission, a move, a rejection and a release, through the real handler."""
    service = PlacementService(CpusetEngine(TOPOLOGY))
    handler = CpusetNriHandler(service)
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=1))
    taken = service.placement("id-pg-0123456789")
    assert taken is not None
    io_pod = pod("io", qos="burstable", pins=taken.cpus.format())
    handler.on_create_container(io_pod, container("io", io_pod))
    bad = pod("bad", qos="burstable", pins="99")
    with pytest.raises(HandlerError):  # the rejection is what is logged
        handler.on_create_container(bad, container("c", bad))
    handler.on_stop_container(db, container("pg", db, cpus=1))


def test_json_lines_parse_and_every_decision_carries_all_fields() -> None:
    out = io.StringIO()
    configure_logging("debug", "json", out)
    logging.getLogger("nri_cpuset.nri").info("registered with the runtime as %s", "99-x")
    decide_a_few_things()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert events[0]["event"] == "registered with the runtime as 99-x"
    assert {"timestamp", "level", "logger"} <= events[0].keys()
    decisions = [e for e in events if e["logger"] == "nri_cpuset.decisions"]
    assert {e["event"] for e in decisions} >= {"admit", "move", "reject", "release", "update"}
    for event in decisions:
        assert event.keys() >= set(FIELDS), event
        assert event["container"].count("/") == 2
        assert len(event["id"]) == 12
    admit = next(e for e in decisions if e["event"] == "admit" and e["kind"] == "annotated")
    assert admit["container"] == "ns/io/io"
    assert admit["id"] == "id-io-012345"
    assert admit["reason"].startswith("pod annotation weka.io/cores-ids=" + admit["cpus"])
    reject = next(e for e in decisions if e["event"] == "reject")
    assert (reject["kind"], reject["reason"], reject["cpus"]) == \
        ("annotated", "cpu-unavailable", "")
    release = next(e for e in decisions if e["event"] == "release")
    assert (release["container"], release["kind"], release["reason"]) == \
        ("ns/db/pg", "integer", "stop")


def test_console_lines_are_the_event_and_its_fields_with_level_and_logger() -> None:
    out = io.StringIO()
    configure_logging("info", "console", out)
    logging.getLogger("nri_cpuset.nri").info("registered with the runtime as %s-%s", "99",
                                             "nri-cpuset")
    decide_a_few_things()
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(" INFO nri_cpuset.nri: registered with the runtime as "
                             "99-nri-cpuset")
    admit = next(line for line in lines if ": admit container=ns/io/io " in line)
    assert " id=id-io-012345 kind=annotated cpus=" in admit
    release = next(line for line in lines if ": release container=ns/db/pg " in line)
    assert " id=id-pg-012345 kind=integer cpus=" in release
    assert " reason=stop " in release
    assert not any(" DEBUG " in line for line in lines)


def test_each_decision_is_logged_once_and_each_field_once() -> None:
    out = io.StringIO()
    configure_logging("info", "console", out)
    decide_a_few_things()
    lines = out.getvalue().splitlines()
    assert sum(": admit container=ns/io/io " in line for line in lines) == 1
    assert sum(": reject container=ns/bad/c " in line for line in lines) == 1
    for line in lines:
        keys = [word.split("=", 1)[0] for word in line.split(" ") if "=" in word]
        assert len(keys) == len(set(keys)), line


def test_a_field_with_spaces_is_quoted_on_the_console() -> None:
    out = io.StringIO()
    configure_logging("info", "console", out)
    logging.getLogger("nri_cpuset.x").info("event", extra={"why": "two words", "empty": ""})
    assert out.getvalue().rstrip().endswith(": event why='two words' empty=''")


def test_an_unknown_level_or_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log level"):
        configure_logging("loud", "console")
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")  # type: ignore[arg-type]


def test_sigusr1_toggles_between_the_configured_level_and_debug_and_says_so() -> None:
    out = io.StringIO()
    control = configure_logging("warning", "console", out)
    debug = logging.getLogger("nri_cpuset.decisions").debug
    debug("hidden")
    control.toggle_debug()
    debug("shown")
    control.toggle_debug()
    debug("hidden again")
    text = out.getvalue()
    assert "hidden" not in text
    assert "shown" in text
    assert "log level switched to debug" in text
    assert "log level switched to warning" in text
    assert logging.getLogger().level == logging.WARNING


def test_with_debug_configured_the_toggle_goes_to_info_and_back() -> None:
    control = configure_logging("debug", "console", io.StringIO())
    control.toggle_debug()
    assert logging.getLogger().level == logging.INFO
    control.toggle_debug()
    assert logging.getLogger().level == logging.DEBUG


def test_each_container_a_background_batch_updates_is_one_debug_event() -> None:
    out = io.StringIO()
    configure_logging("debug", "json", out)
    service = PlacementService(CpusetEngine(TOPOLOGY))
    pusher = service.pusher
    handler = CpusetNriHandler(service)
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    sent: list[int] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append(len(batch))

    async def main() -> None:
        task = asyncio.create_task(pusher.run(send))
        pusher.force(["id-app-0123456789"])
        while not sent:
            await asyncio.sleep(0.001)
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 30))  # a bound against hanging, not a timing check
    updates = [e for e in map(json.loads, out.getvalue().splitlines())
               if e.get("reason") == "background update"]
    assert [(e["event"], e["container"], e["kind"], e["cpus"], e["mems"]) for e in updates] \
        == [("update", "ns/web/app", "shared", "0-15", "default")]


def test_a_reloaded_level_is_the_one_the_toggle_returns_to() -> None:
    control = configure_logging("info", "console", io.StringIO())
    control.set_level("warning")  # a configuration reload
    assert logging.getLogger().level == logging.WARNING
    control.toggle_debug()
    assert logging.getLogger().level == logging.DEBUG
    control.toggle_debug()
    assert logging.getLogger().level == logging.WARNING


def test_the_http2_librarys_header_by_header_debug_records_stay_out_of_a_debug_log() -> None:
    out = io.StringIO()
    configure_logging("debug", "console", stream=out)
    logging.getLogger("hpack.hpack").debug("Adding b':method'=b'POST' to the header table")
    logging.getLogger("h2.connection").debug("Process input ConnectionInputs.SEND_HEADERS")
    logging.getLogger("nri_cpuset.daemon").debug("the plugin's own debug line")
    logging.getLogger("hpack.hpack").warning("a warning still shows")
    lines = out.getvalue().splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "the plugin's own debug line", "a warning still shows"]
