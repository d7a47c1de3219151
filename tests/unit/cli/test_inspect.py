"""The status socket and `nri-cpuset inspect` (no runtime involved)."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cpuset_adapters.status_socket import read_status, serve_status
from cpuset_cli import state_view
from cpuset_cli.commands.explain import explain
from cpuset_cli.commands.inspect import _render, inspect
from cpuset_core import ContainerFacts, CPUSet, CpusetEngine, DeviceLocality, PodFacts
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from tests.unit.cli.status_server import answer, serving


def engine_with_three() -> CpusetEngine:
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT))
    for name, parent, quota, pins in [("web", "/kubepods/burstable/pod1", None, None),
                                      ("db", "/kubepods/pod2", 200_000, None),
                                      ("io", "/kubepods/burstable/pod3", None, "4-5")]:
        pod = PodFacts(sandbox_id=f"s-{name}", namespace="ns", name=name, cgroup_parent=parent,
                       annotations={"weka.io/cores-ids": pins} if pins else {})
        facts = ContainerFacts(id=f"id-{name}", sandbox_id=pod.sandbox_id, name="main",
                               cpu_quota=quota, cpu_period=100_000 if quota else None)
        engine.commit(engine.plan_create(pod, facts))
    return engine


def test_state_view_lists_containers_refcounts_owners_and_drift() -> None:
    view = state_view.build(engine_with_three(), runtime="containerd 1.7.24",
                            synchronized=True, known={"id-web": CPUSet.parse("0-15"),
                                                       "id-db": CPUSet.parse("0,8")},
                            pending=frozenset({"id-web"}))
    kinds = {c.id: (c.kind, c.cpus, c.mems) for c in view.containers}
    assert kinds == {"id-web": ("shared", "1-3,6-7,9-15", None),
                     "id-db": ("integer", "0,8", None), "id-io": ("annotated", "4-5", "1")}
    assert view.pinned == {"4": 1, "5": 1}
    assert view.exclusive == {"0": "id-db", "8": "id-db"}
    assert view.drift == ["id-web"]  # the plugin last set 0-15; the ledger says otherwise
    assert state_view.decode(state_view.encode(view)) == view


def test_lagging_runtime_records_are_listed_apart_from_pending_updates() -> None:
    """Decision 51: a record that waits for an answer to ride on is not pending."""
    inputs = state_view.StatusInputs(committed=state_view.Committed.of(engine_with_three()),
                                     runtime="containerd 1.7.24", synchronized=True,
                                     pending=frozenset({"id-db"}),
                                     records=frozenset({"id-web", "id-io"}))
    view = state_view.decode(state_view.render(inputs))
    assert view.pending_updates == ["id-db"]
    assert view.records_lagging == ["id-io", "id-web"]


def crowded_engine(count: int) -> CpusetEngine:
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT))
    for n in range(count):
        pod = PodFacts(sandbox_id=f"s{n}", namespace="ns", name=f"p{n}",
                       cgroup_parent=f"/kubepods/burstable/pod{n}")
        engine.commit(engine.plan_create(pod, ContainerFacts(id=f"c{n:04d}", sandbox_id=f"s{n}",
                                                             name="main")))
    return engine


def test_the_document_comes_in_slices_of_containers_that_join_into_one_view() -> None:
    engine = crowded_engine(2 * state_view.SLICE + 1)
    inputs = state_view.StatusInputs(committed=state_view.Committed.of(engine),
                                     runtime="containerd", synchronized=True,
                                     known={"c0007": CPUSet.parse("0")})
    pieces = list(state_view.render_slices(inputs))
    assert len(pieces) == 1 + 3 + 1  # the opening, three slices, the rest
    view = state_view.decode(b"".join(pieces))
    assert [c.id for c in view.containers] == sorted(engine.ledger.entries)
    assert view.drift == ["c0007"]
    assert view.shared_pool == engine.shared_pool().format()


def test_an_empty_node_is_a_valid_document() -> None:
    inputs = state_view.StatusInputs(
        committed=state_view.Committed.of(CpusetEngine(build_topology(DUAL_SOCKET_HT))),
        runtime="", synchronized=False)
    view = state_view.decode(state_view.render(inputs))
    assert view.containers == []
    assert view.drift == []


def test_state_view_shows_the_cpus_draining_until_the_kernel_shows_them_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT), confirm_releases=True)
    pod = PodFacts(sandbox_id="s-db", namespace="ns", name="db", cgroup_parent="/kubepods/pod2")
    for quota in (400_000, 200_000):  # a shrinking resize: two CPUs given up
        facts = ContainerFacts(id="id-db", sandbox_id="s-db", name="main", cpu_quota=quota,
                               cpu_period=100_000)
        plan = (engine.plan_create(pod, facts) if quota == 400_000
                else engine.plan_resize(pod, facts))
        engine.commit(plan)
    view = state_view.build(engine, runtime="containerd 1.7.24", synchronized=True, known={},
                            pending=frozenset())
    assert view.draining == "1,9"
    assert view.exclusive == {"0": "id-db", "8": "id-db"}
    assert state_view.decode(state_view.encode(view)) == view
    _render(view)
    assert "draining: 1,9 (given up, not yet seen left in the kernel: kept from exclusive use)" \
        in capsys.readouterr().out
    engine.confirm("id-db", CPUSet.parse("0,8"))
    assert state_view.build(engine, runtime="", synchronized=True, known={},
                            pending=frozenset()).draining == ""


def test_decode_refuses_other_schemas_and_garbage() -> None:
    with pytest.raises(ValueError, match="unsupported status schema 99"):
        state_view.decode(b'{"schema": 99}')
    with pytest.raises(ValueError, match="malformed"):
        state_view.decode(b'{"schema": 1, "runtime": 3}')




@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    view = state_view.build(engine_with_three(), runtime="containerd 1.7.24",
                            synchronized=True, known={"id-web": CPUSet.parse("0-15")},
                            pending=frozenset(),
                            history={"id-db": ["created: integer cpus=0,8 mems=default (...)",
                                               "moved 0,8 -> 1,9: moved off CPUs 0"]})
    with serving(tmp_path / "run" / "status.sock", view) as path:
        yield path


def test_status_socket_is_root_only_and_answers_the_document(served: Path) -> None:
    assert stat.S_IMODE(served.stat().st_mode) == 0o600
    assert stat.S_IMODE(served.parent.stat().st_mode) == 0o700
    assert json.loads(read_status(served))["schema"] == state_view.SCHEMA_VERSION


def test_inspect_renders_a_table_and_json(served: Path) -> None:
    table = CliRunner().invoke(inspect, ["--status-socket", str(served)])
    assert table.exit_code == 0, table.output
    assert "ns/db/main" in table.output
    assert "pinned (refcount): 4×1, 5×1" in table.output
    raw = CliRunner().invoke(inspect, ["--status-socket", str(served), "-o", "json"])
    assert json.loads(raw.output)["exclusive"] == {"0": "id-db", "8": "id-db"}


def test_inspect_without_a_daemon_says_so_with_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(inspect, ["--status-socket", str(tmp_path / "none.sock")])
    assert result.exit_code == 2
    assert "is `nri-cpuset run` running" in result.output
    assert "Traceback" not in result.output


def test_a_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "status.sock"

    async def twice() -> bytes:
        first = await serve_status(path, answer(b"one"))
        first.close()
        await first.wait_closed()
        second = await serve_status(path, answer(b"two"))
        async with second:
            return await asyncio.get_running_loop().run_in_executor(None, read_status, path)

    assert asyncio.run(twice()) == b"two"


@pytest.mark.parametrize("name", ["id-db", "ns/db/main", "db/main"])
def test_explain_shows_classification_allocation_and_moves(served: Path, name: str) -> None:
    result = CliRunner().invoke(explain, [name, "--status-socket", str(served)])
    assert result.exit_code == 0, result.output
    assert "kind:  integer" in result.output
    assert "why:   Guaranteed pod, 2 whole CPU(s); NUMA node 0 (best fit, 8 free): 1 whole " \
           "core(s)" in result.output
    assert "- moved 0,8 -> 1,9: moved off CPUs 0" in result.output


def test_explain_of_a_shared_container_explains_the_pool_and_drift(served: Path) -> None:
    result = CliRunner().invoke(explain, ["ns/web/main", "--status-socket", str(served)])
    assert result.exit_code == 0, result.output
    assert "the shared pool is online (0-15) minus pinned and exclusive" in result.output
    assert "drift:" in result.output


@pytest.mark.parametrize(("name", "message"), [("nothing", "matches nothing"),
                                               ("main", "matches 3 containers")])
def test_explain_needs_exactly_one_match(served: Path, name: str, message: str) -> None:
    result = CliRunner().invoke(explain, [name, "--status-socket", str(served)])
    assert result.exit_code == 2
    assert message in result.output


def test_the_status_socket_refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    shared_dir = tmp_path / "open"
    shared_dir.mkdir(mode=0o777)
    shared_dir.chmod(0o777)
    with pytest.raises(OSError, match="writable by nobody else"):
        asyncio.run(serve_status(shared_dir / "status.sock", answer(b"")))


def test_the_status_socket_refuses_a_symlink(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "status.sock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="symlink"):
        asyncio.run(serve_status(private / "status.sock", answer(b"")))


def test_explain_names_the_numa_node_of_a_containers_devices(tmp_path: Path) -> None:
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT))
    pod = PodFacts(sandbox_id="s-nic", namespace="ns", name="nic", cgroup_parent="/kubepods/pod9")
    vf = DeviceLocality(device="PCIDEVICE_SRIOV=0000:41:00.2", pci=("0000:41:00.2",),
                        numa_nodes=CPUSet((1,)))
    engine.commit(engine.plan_create(pod, ContainerFacts(
        id="id-nic", sandbox_id="s-nic", name="main", cpu_quota=200_000, cpu_period=100_000,
        devices=(vf,))))
    view = state_view.build(engine, runtime="containerd", synchronized=True, known={},
                            pending=frozenset())
    with serving(tmp_path / "status.sock", view) as path:
        result = CliRunner().invoke(explain, ["ns/nic/main", "--status-socket", str(path)])
    assert result.exit_code == 0, result.output
    assert "  cpus:  4,12\n" in result.output  # node 1's first whole core
    assert "  devices: on NUMA node 1 (its exclusive CPUs are taken there" in result.output
    assert "PCIDEVICE_SRIOV=0000:41:00.2 (PCI 0000:41:00.2): NUMA node 1" in result.output
