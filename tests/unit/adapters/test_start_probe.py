"""The start probe: what CRI and the kernel say of containers not seen to start."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import pytest

from cpuset_adapters.cgroupfs import CgroupReader
from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import ContainerStatus
from cpuset_adapters.cri.start_probe import CriStartProbe
from cpuset_adapters.grpc_status import StatusCode
from cpuset_core import RuntimeState, StartReport

NOW = 1_800_000_000.0


def status(cid: str, state: str, *, created: float, reason: str = "",
           message: str = "") -> ContainerStatus:
    return ContainerStatus(id=cid, name="app", state=state, exit_code=128 if reason else 0,
                           reason=reason, message=message, resources=None, annotations={},
                           pid=None, info={}, created_at=int(created * 1e9))


class FakeCri:
    """ContainerStatus from a table (a missing id is NOT_FOUND; ``down`` fails every call)."""

    def __init__(self, table: dict[str, ContainerStatus], *, down: bool = False) -> None:
        self.table = table
        self.down = down
        self.verbose: list[bool] = []
        self.sockets: list[str] = []

    def __call__(self, socket: str) -> FakeCri:
        self.sockets.append(socket)
        return self

    def __enter__(self) -> FakeCri:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        pass

    def container_status(self, container_id: str, *, verbose: bool = True) -> ContainerStatus:
        self.verbose.append(verbose)
        if self.down:
            raise CriError("ContainerStatus", StatusCode.UNAVAILABLE, "connection refused")
        if container_id not in self.table:
            raise CriError("ContainerStatus", StatusCode.NOT_FOUND, "not found")
        return self.table[container_id]


def cgroup(root: Path, name: str, procs: str) -> str:
    """A v1 cpuset cgroup ``/kubepods/<name>`` under ``root`` whose cgroup.procs holds
    ``procs``; returns its path as the runtime gives it."""
    directory = root / "cpuset" / "kubepods" / name
    directory.mkdir(parents=True)
    (directory / "cgroup.procs").write_text(procs)
    return f"/kubepods/{name}"


def probe(tmp_path: Path, cri: FakeCri) -> CriStartProbe:
    return CriStartProbe("/run/cri.sock", CgroupReader(tmp_path), clock=lambda: NOW,
                         client=cri)  # type: ignore[arg-type]


def test_a_failed_start_is_reported_exited_with_the_runtimes_words(tmp_path: Path) -> None:
    cri = FakeCri({"a": status("a", "CONTAINER_EXITED", created=NOW - 3, reason="StartError",
                               message='exec: "/nonexistent": no such file or directory\n')})
    reports = probe(tmp_path, cri).reports({"a": "/kubepods/a"})
    assert reports == {"a": StartReport(
        state=RuntimeState.EXITED, age=3.0, has_tasks=False,
        detail='StartError: exec: "/nonexistent": no such file or directory')}
    assert cri.verbose == [False]  # the runtime spec is not needed: a small answer
    assert cri.sockets == ["/run/cri.sock"]


def test_a_created_container_is_reported_with_its_age_and_no_words(tmp_path: Path) -> None:
    cri = FakeCri({"b": status("b", "CONTAINER_CREATED", created=NOW - 42.5)})
    assert probe(tmp_path, cri).reports({"b": ""}) == {
        "b": StartReport(state=RuntimeState.CREATED, age=42.5)}


def test_processes_in_its_cgroup_are_reported_whatever_the_runtime_says(tmp_path: Path) -> None:
    cri = FakeCri({"c": status("c", "CONTAINER_EXITED", created=NOW - 1, reason="StartError")})
    path = cgroup(tmp_path, "c", "4242\n")
    (report,) = probe(tmp_path, cri).reports({"c": path}).values()
    assert report.has_tasks
    empty = cgroup(tmp_path, "d", "")
    cri.table["d"] = status("d", "CONTAINER_EXITED", created=NOW - 1)
    assert not probe(tmp_path, cri).reports({"d": empty})["d"].has_tasks


def test_a_container_the_runtime_does_not_list_is_reported_unlisted(tmp_path: Path) -> None:
    assert probe(tmp_path, FakeCri({})).reports({"e": "/kubepods/e"}) == {
        "e": StartReport(state=None)}


def test_a_runtime_that_does_not_answer_raises_so_nothing_is_decided(tmp_path: Path) -> None:
    cri = FakeCri({"a": status("a", "CONTAINER_EXITED", created=NOW)}, down=True)
    with pytest.raises(CriError, match="UNAVAILABLE"):
        probe(tmp_path, cri).reports({"a": ""})


def test_the_socket_a_runtime_config_names_is_the_one_asked(tmp_path: Path) -> None:
    cri = FakeCri({})
    started = probe(tmp_path, cri)
    started.cri_socket = "/elsewhere.sock"
    started.reports({"a": ""})
    assert cri.sockets == ["/elsewhere.sock"]
