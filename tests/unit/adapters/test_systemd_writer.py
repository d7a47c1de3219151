"""The fast path on systemd-driver nodes: a scope's unit properties set before its cgroup
files, nothing asked of systemd for cgroupfs paths or on cgroup v1, and every way systemd can
fail (no bus, too old, refusing, silent, the unit gone) leaving the files written, the step's
outcome theirs, one warning per episode and a count per container."""

from __future__ import annotations

import errno
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cpuset_adapters import cgroup_writer
from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_adapters.kept_files import KeptFiles
from cpuset_adapters.systemd.bus import BusError
from cpuset_adapters.systemd.call import UnitCpuset
from cpuset_adapters.systemd.scope_writer import (
    READBACK_PAUSE,
    READBACK_TRIES,
    RETRY_AFTER,
    SystemdScopeWriter,
    outcome_of,
)
from cpuset_core import CPUSet
from tests.unit.adapters.cgroup_trees import (
    V1_PATH,
    V2_DIR,
    V2_PATH,
    update,
    v1_tree,
    v2_tree,
)
from tests.unit.adapters.systemd_fakes import Clock, Counts, FakeBus

SCOPE = "cri-containerd-c-web.scope"


def build(root: Path, bus: FakeBus, paths: dict[str, str] | None = None,
          ) -> tuple[SystemdScopeWriter, Counts, Clock]:
    paths = paths if paths is not None else {"c-web": V2_PATH}
    counts, clock = Counts(), Clock()
    files = KernelCpusetWriter(root, paths.get)
    return SystemdScopeWriter(files, paths.get, bus, count=counts, clock=clock), counts, clock


def test_a_scopes_unit_is_set_before_its_cgroup_files(tmp_path: Path) -> None:
    directory = v2_tree(tmp_path)
    bus = FakeBus(files=directory / "cpuset.cpus")
    writer, counts, _ = build(tmp_path, bus)
    outcome = writer.apply([update(cpus="2-15", mems="1")])
    assert outcome.ok
    assert bus.calls == [[UnitCpuset(SCOPE, CPUSet.parse("2-15"), CPUSet.parse("1"))]]
    assert bus.file_at_call == ["0-15"]  # the unit first, as runc does
    assert (directory / "cpuset.cpus").read_text() == "2-15"
    assert counts.seen == {"set": 1}


def test_a_cgroupfs_driver_container_is_not_asked_of_systemd(tmp_path: Path) -> None:
    v2_tree(tmp_path)
    cgroupfs = tmp_path / "kubepods/burstable/pod1/c-db"
    cgroupfs.mkdir(parents=True)
    (cgroupfs / "cpuset.cpus").write_text("0-15\n")
    bus = FakeBus()
    writer, _, _ = build(tmp_path, bus, {"c-db": "/kubepods/burstable/pod1/c-db"})
    assert writer.apply([update("c-db")]).ok
    assert bus.calls == []
    assert bus.connects == 0


def test_on_cgroup_v1_systemd_owns_no_cpuset_and_is_not_asked(tmp_path: Path) -> None:
    v1_tree(tmp_path)
    scope = tmp_path / "cpuset" / V2_DIR
    scope.mkdir(parents=True)
    (scope / "cpuset.cpus").write_text("0-15\n")
    bus = FakeBus()
    writer, _, _ = build(tmp_path, bus, {"c-web": V2_PATH, "c-v1": V1_PATH})
    assert writer.apply([update()]).ok
    assert bus.connects == 0


def test_switched_off_only_the_files_are_written(tmp_path: Path) -> None:
    directory = v2_tree(tmp_path)
    bus = FakeBus()
    writer, _, _ = build(tmp_path, bus)
    writer.switch(enabled=False)
    assert writer.apply([update()]).ok
    assert bus.connects == 0
    assert (directory / "cpuset.cpus").read_text() == "2-15"


def test_no_bus_leaves_the_files_warns_once_counts_each_and_tries_again_later(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = v2_tree(tmp_path)
    bus = FakeBus(refuse=BusError("no-bus", "/run/dbus/system_bus_socket: no such file"))
    writer, counts, clock = build(tmp_path, bus)
    with caplog.at_level(logging.WARNING, "nri_cpuset.kernel"):
        for cpus in ("2-15", "3-15", "4-15"):
            assert writer.apply([update(cpus=cpus)]).ok
    assert (directory / "cpuset.cpus").read_text() == "4-15"
    assert len(caplog.records) == 1
    assert caplog.records[0].outcome == "no-bus"
    assert counts.seen == {"no-bus": 3}
    assert bus.connects == 1  # not again before RETRY_AFTER
    clock.now += RETRY_AFTER
    bus.refuse = None
    writer.apply([update(cpus="5-15")])
    assert bus.connects == 2
    assert counts.seen["set"] == 1


def test_an_old_systemd_is_never_asked_again(tmp_path: Path) -> None:
    v2_tree(tmp_path)
    bus = FakeBus(refuse=BusError("old-systemd", "systemd 239 has no AllowedCPUs"))
    writer, counts, clock = build(tmp_path, bus)
    writer.apply([update()])
    clock.now += 10 * RETRY_AFTER
    writer.apply([update(cpus="3-15")])
    assert bus.connects == 1
    assert counts.seen == {"old-systemd": 2}


def test_a_property_systemd_does_not_know_is_an_old_systemd(tmp_path: Path) -> None:
    v2_tree(tmp_path)
    bus = FakeBus(problems={SCOPE: "org.freedesktop.DBus.Error.PropertyReadOnly: Cannot set "
                                   "property AllowedCPUs, or unknown property."})
    writer, counts, _ = build(tmp_path, bus)
    assert writer.apply([update()]).ok
    assert writer.apply([update(cpus="3-15")]).ok
    assert len(bus.calls) == 1
    assert counts.seen == {"set": 0, "old-systemd": 2}


def test_a_call_refused_for_want_of_permission_pauses_the_bus(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    v2_tree(tmp_path)
    bus = FakeBus(problems={SCOPE: "org.freedesktop.DBus.Error.AccessDenied: denied"})
    writer, counts, clock = build(tmp_path, bus)
    with caplog.at_level(logging.WARNING, "nri_cpuset.kernel"):
        assert writer.apply([update()]).ok
        assert writer.apply([update(cpus="3-15")]).ok
    assert len(bus.calls) == 1
    assert len(caplog.records) == 1
    assert counts.seen == {"set": 0, "refused": 2}
    clock.now += RETRY_AFTER
    bus.problems.clear()
    writer.apply([update(cpus="4-15")])
    assert len(bus.calls) == 2
    assert counts.seen["set"] == 1


def test_a_unit_gone_with_its_container_is_counted_without_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    v2_tree(tmp_path)
    bus = FakeBus(problems={SCOPE: "org.freedesktop.systemd1.NoSuchUnit: Unit not loaded."})
    writer, counts, _ = build(tmp_path, bus)
    with caplog.at_level(logging.WARNING, "nri_cpuset.kernel"):
        assert writer.apply([update()]).ok
    assert not caplog.records
    assert counts.seen == {"set": 0, "gone": 1}


def test_no_reply_in_time_leaves_the_files_and_says_so_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = v2_tree(tmp_path)
    bus = FakeBus(problems={SCOPE: "timeout"})
    writer, counts, _ = build(tmp_path, bus)
    with caplog.at_level(logging.INFO, "nri_cpuset.kernel"):
        writer.apply([update()])
        writer.apply([update(cpus="3-15")])
        bus.problems.clear()
        writer.apply([update(cpus="4-15")])
    assert (directory / "cpuset.cpus").read_text() == "4-15"
    assert counts.seen == {"set": 1, "timeout": 2}
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING", "INFO"]
    assert "set again" in caplog.records[-1].getMessage()


def test_a_refused_file_is_the_steps_outcome_whatever_systemd_said(tmp_path: Path) -> None:
    v2_tree(tmp_path)
    bus = FakeBus()
    writer, _, _ = build(tmp_path, bus, {"c-web": V2_PATH, "c-gone": "s.slice:cri-containerd:x"})
    outcome = writer.apply([update(), update("c-gone")])
    assert outcome.failed == ("c-gone",)
    assert [r.unit for r in bus.calls[0]] == [SCOPE, "cri-containerd-x.scope"]


def test_the_runtimes_request_timeout_sets_the_wait() -> None:
    assert outcome_of("timeout") == "timeout"
    writer = SystemdScopeWriter(KernelCpusetWriter("/nonexistent", {}.get), {}.get, FakeBus())
    writer.budget(8.0)
    assert writer.wait == 2.0
    writer.budget(0)  # not sent by the runtime: kept
    assert writer.wait == 2.0


def test_the_daemons_modules_leave_jeepney_unimported_until_a_scope_is_written() -> None:
    import subprocess
    import sys

    probe = ("import sys, cpuset_cli.daemon.plugin, cpuset_cli.bootstrap, "
             "cpuset_adapters.systemd.scope_writer, cpuset_adapters.systemd.bus; "
             "print(any(m.split('.')[0] == 'jeepney' for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "False"


def keep_from_plugin(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """The kernel refuses the plugin every write under ``directory`` (EPERM), as it does for
    the plugin's own container on cgroup v2 mounted with nsdelegate."""
    real = cgroup_writer._write_file

    def write(path: str, value: str) -> None:
        if path.startswith(str(directory)):
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        real(path, value)

    monkeypatch.setattr(cgroup_writer, "_write_file", write)
    real_kept = KeptFiles.write

    def kept(files: KeptFiles, container_id: str, path: str, value: bytes) -> None:
        if path.startswith(str(directory)):  # cpuset.cpus, written through the kept files
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        real_kept(files, container_id, path, value)

    monkeypatch.setattr(KeptFiles, "write", kept)


@dataclass
class SystemdRealizes:
    """systemd writing a unit's set properties into its cgroup just after its reply: on the
    ``after``-th pause of the reader (``None``: never)."""

    file: Path
    value: str
    after: int | None
    pauses: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.pauses.append(seconds)
        if len(self.pauses) == self.after:
            self.file.write_text(self.value + "\n")


def test_the_plugins_own_scope_refused_to_it_counts_as_written_once_systemd_wrote_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        ) -> None:
    directory = v2_tree(tmp_path)
    keep_from_plugin(monkeypatch, directory)
    realizes = SystemdRealizes(directory / "cpuset.cpus", "2-15", after=2)
    writer, counts, _ = build(tmp_path, FakeBus())
    writer._sleep = realizes
    with caplog.at_level(logging.INFO, logger="nri_cpuset.kernel"):
        assert writer.apply([update(cpus="2-15")]).ok
    assert realizes.pauses == [READBACK_PAUSE] * 2  # read back until systemd got there
    assert counts.seen == {"set": 1}
    assert any("written by systemd" in r.getMessage() for r in caplog.records)


def test_a_refused_file_systemd_never_writes_is_refused_after_a_bounded_read_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = v2_tree(tmp_path)
    keep_from_plugin(monkeypatch, directory)
    realizes = SystemdRealizes(directory / "cpuset.cpus", "2-15", after=None)
    writer, _, _ = build(tmp_path, FakeBus())
    writer._sleep = realizes
    outcome = writer.apply([update(cpus="2-15")])
    assert outcome.failed == ("c-web",)
    assert "Operation not permitted" in outcome.detail
    assert realizes.pauses == [READBACK_PAUSE] * (READBACK_TRIES - 1)


@pytest.mark.parametrize("bus", [FakeBus(problems={SCOPE: "org.freedesktop.DBus.Error."
                                                          "AccessDenied: no"}),
                                 FakeBus(refuse=BusError("no-bus", "no socket"))],
                         ids=["unit refused", "no bus"])
def test_a_refused_file_whose_unit_systemd_did_not_set_is_refused_without_reading_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bus: FakeBus) -> None:
    directory = v2_tree(tmp_path)
    keep_from_plugin(monkeypatch, directory)
    (directory / "cpuset.cpus").write_text("2-15\n")  # even if it held the value already
    writer, _, _ = build(tmp_path, bus)
    pauses: list[float] = []
    writer._sleep = pauses.append
    assert writer.apply([update(cpus="2-15")]).failed == ("c-web",)
    assert pauses == []
