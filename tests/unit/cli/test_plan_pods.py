"""``nri-cpuset plan --pods`` on kubectl-shaped files: exit codes 0 / 3 / 2, moves, pool changes,
init containers, ``--state``, and ``--demo`` through the new command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cpuset_cli import state_view
from cpuset_cli.commands.plan import plan
from cpuset_core import ContainerFacts, CPUSet, CpusetEngine, PodFacts
from cpuset_lab.machines import DUAL_SOCKET_HT, EPYC_LIKE, build_topology, write_sysfs_tree
from tests.builders.kube import kube_list, pod
from tests.unit.cli.plan_pods_support import cpus, invoke, steps


def test_all_admitted_is_exit_0_with_kind_cpus_and_mems(machine: Path) -> None:
    result = invoke(machine, kube_list(
        pod("web", {"name": "app", "resources": {"requests": {"cpu": "500m"}}}),
        pod("db", cpus("postgres", "4")),
        pod("io", cpus("io", None), namespace="storage",
            annotations={"weka.io/cores-ids": "4-5"}),
    ), "-o", "json")
    assert result.exit_code == 0, result.output
    by_name = {s["container"]: s for s in steps(result)}
    assert by_name["app"]["kind"] == "shared"
    assert by_name["app"]["qos"] == "Burstable"
    assert by_name["postgres"]["kind"] == "integer"
    assert by_name["postgres"]["cpus"] == "0-1,8-9"
    assert by_name["postgres"]["mems"] is None
    assert by_name["io"]["kind"] == "annotated"
    assert by_name["io"]["cpus"] == "4-5"
    assert by_name["io"]["mems"] == "1"
    # The integer pod shrank the shared pool under the web pod.
    assert by_name["postgres"]["shared_pool"] == {
        "before": "0-15", "after": "2-7,10-15", "containers": ["default/web/app"]}
    document = json.loads(result.stdout)
    assert (document["schema"], document["admitted"], document["rejected"]) == (1, 3, 0)
    assert "3 container(s) admitted, 0 rejected" in result.stderr


def test_a_pin_on_an_integer_containers_cpus_shows_the_live_move(machine: Path) -> None:
    result = invoke(machine, kube_list(
        pod("db", cpus("postgres", "2")),
        pod("io", cpus("io", None), annotations={"weka.io/cores-ids": "0"}),
    ), "-o", "json")
    assert result.exit_code == 0, result.output
    io = steps(result)[1]
    assert io["moves"] == [{"container": "default/db/postgres", "kind": "integer",
                            "previous_cpus": "0,8", "cpus": "1,9",
                            "reason": "moved off CPUs 0 pinned by default/io/io"}]


def test_rejections_are_exit_3_with_the_typed_reason(machine: Path) -> None:
    result = invoke(machine, kube_list(
        pod("big", cpus("c", "32")),
        pod("typo", cpus("c", None), annotations={"weka.io/cores-ids": "0,,1"}),
        pod("ok", cpus("c", "1")),
    ), "-o", "json")
    assert result.exit_code == 3
    big, typo, ok = steps(result)
    assert big["rejected"]["reason"] == "insufficient-cpus"
    assert big["kind"] is None
    assert "needs 32 exclusive CPU(s)" in big["rejected"]["message"]
    assert typo["rejected"]["reason"] == "invalid-annotation"
    assert ok["kind"] == "integer"
    assert "2 container(s) admitted, 1 rejected" not in result.stderr
    assert "1 container(s) admitted, 2 rejected" in result.stderr


def test_the_table_shows_moves_pool_changes_and_rejections(machine: Path) -> None:
    result = invoke(machine, kube_list(
        pod("web", {"name": "app"}),
        pod("db", cpus("postgres", "2")),
        pod("io", cpus("io", None), annotations={"weka.io/cores-ids": "0"}),
        pod("big", cpus("c", "64")),
    ))
    assert result.exit_code == 3
    out = result.stdout
    assert out.splitlines()[0].split() == ["#", "action", "container", "kind", "cpus", "mems",
                                           "result"]
    assert "live move    default/db/postgres" in out
    assert "0,8 -> 1,9" in out
    assert "shared pool  default/web/app" in out
    assert "REJECTED insufficient-cpus: needs 64 exclusive CPU(s)" in out


def test_init_containers_release_their_cpus_before_the_app_containers(machine: Path) -> None:
    result = invoke(machine, kube_list(pod(
        "db", cpus("postgres", "8"),
        init=[cpus("migrate", "8"), cpus("proxy", "2", restartPolicy="Always")],
    )), "-o", "json")
    assert result.exit_code == 0, result.output
    actions = [(s["action"], s["container"], s["cpus"]) for s in steps(result)]
    # migrate exits (its 8 CPUs come back); the sidecar proxy keeps its core.
    assert actions == [("create", "migrate", "0-3,8-11"), ("exit", "migrate", "0-3,8-11"),
                       ("create", "proxy", "0,8"), ("create", "postgres", "4-7,12-15")]


def test_bad_input_is_exit_2_naming_file_pod_and_field(machine: Path) -> None:
    result = invoke(machine, kube_list(pod("web", {"name": "app", "resources": {
        "limits": {"cpu": "two"}}})))
    assert result.exit_code == 2
    assert result.stdout == ""
    path = machine.parent / "pods.json"
    assert result.stderr == (f'error: {path}: items[0] (pod default/web): '
                             f'spec.containers[0].resources.limits.cpu: "two" is not a quantity '
                             f'(like "500m", "2", "1.5" or "1Gi")\n')


@pytest.mark.parametrize(("document", "message"), [
    ({"kind": "Deployment"}, "kind: \"Deployment\" is not a pod shape"),
    ("{ not json", "not JSON"),
    ("kind: [", "not YAML"),
])
def test_unknown_shapes_and_unparsable_files_are_exit_2(machine: Path, document: object,
                                                        message: str) -> None:
    result = invoke(machine, document, name="pods.yaml")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_pods_file_is_exit_2(machine: Path) -> None:
    result = CliRunner().invoke(plan, ["--pods", str(machine.parent / "none.json"),
                                       "--topology", str(machine)])
    assert result.exit_code == 2
    assert "none.json: cannot be read" in result.stderr


def test_yaml_pods_on_a_sysfs_tree(tmp_path: Path) -> None:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path / "sys")
    (tmp_path / "pods.yaml").write_text(
        "kind: Pod\nmetadata: {name: db}\nspec:\n  containers:\n  - name: pg\n"
        "    resources: {limits: {cpu: 2, memory: 1Gi}}\n")
    result = CliRunner().invoke(plan, ["--pods", str(tmp_path / "pods.yaml"),
                                       "--sysfs-root", str(tmp_path / "sys")])
    assert result.exit_code == 0, result.output
    assert "default/db/pg" in result.stdout
    assert "integer" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    ([], "pass --pods FILE"),
    (["--demo", "--pods", "x.json"], "mutually exclusive"),
    (["--demo", "--state", "x.json"], "--state applies to --pods"),
])
def test_usage_errors_are_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(plan, args)
    assert result.exit_code == 2
    assert message in result.output


def test_sysfs_root_and_topology_are_mutually_exclusive(machine: Path) -> None:
    result = invoke(machine, kube_list(), "--sysfs-root", "/sys")
    assert result.exit_code == 2
    assert "mutually exclusive" in result.output


def test_the_demo_still_runs_through_the_new_command(machine: Path) -> None:
    result = CliRunner().invoke(plan, ["--demo", "--topology", str(machine), "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    by_container = {r["container"]: r for r in rows if r["action"] == "create"}
    assert by_container["default/db/postgres"]["cpus"] == "0-1,8-9"
    assert by_container["storage/typo/io"]["result"].startswith("REJECTED invalid-annotation")


# -- starting from a saved live state ----------------------------------------------------------


def _saved_state(tmp_path: Path) -> Path:
    """What `inspect -o json` would save: a shared web pod and an integer db on 0-1,8-9."""
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT))
    web = PodFacts(sandbox_id="s1", namespace="shop", name="web",
                   cgroup_parent="/kubepods/burstable/pods1")
    db = PodFacts(sandbox_id="s2", namespace="shop", name="db", cgroup_parent="/kubepods/pods2")
    io = PodFacts(sandbox_id="s3", namespace="storage", name="io",
                  annotations={"weka.io/cores-ids": "6"})
    engine.commit(engine.plan_create(web, ContainerFacts(id="c1", sandbox_id="s1", name="app")))
    engine.commit(engine.plan_create(db, ContainerFacts(id="c2", sandbox_id="s2", name="pg",
                                                        cpu_quota=400_000, cpu_period=100_000)))
    engine.commit(engine.plan_create(io, ContainerFacts(id="c3", sandbox_id="s3", name="io")))
    view = state_view.build(engine, runtime="containerd", synchronized=True, known={},
                            pending=frozenset())
    path = tmp_path / "live.json"
    path.write_bytes(state_view.encode(view))
    return path


def test_state_starts_from_the_saved_placements(machine: Path) -> None:
    state = _saved_state(machine.parent)
    result = invoke(machine, kube_list(pod("new", cpus("c", "4"))), "--state", str(state),
                    "-o", "json")
    assert result.exit_code == 0, result.output
    (new,) = steps(result)
    # 0-1,8-9 (db) and 6 (pinned) are taken: the new container goes elsewhere, and the shared
    # web pod's pool shrinks again.
    assert new["cpus"] == "2-3,10-11"
    assert new["shared_pool"]["containers"] == ["shop/web/app"]
    assert new["shared_pool"]["before"] == "2-5,7,10-15"
    assert json.loads(result.stdout)["state_problems"] == []


def test_a_bad_state_file_is_exit_2(machine: Path) -> None:
    bad = machine.parent / "bad-state.json"
    bad.write_text('{"schema": 99}')
    result = invoke(machine, kube_list(), "--state", str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: unsupported status schema 99")
    result = invoke(machine, kube_list(), "--state", str(machine.parent / "none.json"))
    assert result.exit_code == 2
    assert "cannot be read" in result.stderr


def test_state_containers_that_cannot_be_placed_again_are_warnings(machine: Path) -> None:
    # Saved on a 32-CPU machine: a pin on CPU 20, which the 16-CPU target does not have.
    engine = CpusetEngine(build_topology(EPYC_LIKE))
    io = PodFacts(sandbox_id="s1", namespace="storage", name="io",
                  annotations={"weka.io/cores-ids": "20"})
    engine.commit(engine.plan_create(io, ContainerFacts(id="c1", sandbox_id="s1", name="io")))
    view = state_view.build(engine, runtime="containerd", synchronized=True, known={},
                            pending=frozenset())
    state = machine.parent / "other-machine.json"
    state.write_bytes(state_view.encode(view))
    result = invoke(machine, kube_list(pod("new", cpus("c", "2"))), "--state", str(state),
                    "-o", "json")
    assert result.exit_code == 0, result.output
    problems = json.loads(result.stdout)["state_problems"]
    assert len(problems) == 1
    assert "storage/io/io" in problems[0]
    assert f"warning: {state}: storage/io/io" in result.stderr


# -- devices -----------------------------------------------------------------------------------


def test_device_places_a_container_near_its_devices_and_says_so(machine: Path) -> None:
    document = kube_list(pod("db", cpus("postgres", "4")), pod("nvme", cpus("io", "2")))
    result = invoke(machine, document, "-o", "json", "--device", "default/nvme/io=1")
    assert result.exit_code == 0, result.output
    by_name = {s["container"]: s for s in steps(result)}
    assert by_name["postgres"]["cpus"] == "0-1,8-9"  # node 0, as without devices
    assert by_name["io"]["cpus"] == "4,12"  # node 1, where best fit alone would pick node 0
    assert "devices on NUMA node 1 (--device: NUMA node 1)" in by_name["io"]["reason"]
    assert "near its devices (NUMA node 1)" in by_name["io"]["reason"]


@pytest.mark.parametrize(("option", "message"), [
    ("default/nope/io=1", "--device names no container of --pods: default/nope/io"),
    ("default/nvme/io=x", "--device default/nvme/io=x: NODES must be a list like 1 or 0-1"),
])
def test_a_bad_device_option_is_a_usage_error(machine: Path, option: str, message: str) -> None:
    result = invoke(machine, kube_list(pod("nvme", cpus("io", "2"))), "--device", option)
    assert result.exit_code == 2
    assert message in result.output


def test_a_saved_states_devices_steer_the_moves_a_plan_causes(machine: Path) -> None:
    state = _saved_state(machine.parent)
    document = json.loads(state.read_text())
    for saved in document["containers"]:
        if saved["subject"] == "shop/db/pg":
            saved["devices"] = "1"  # its devices on node 1, its CPUs (0-1,8-9) on node 0
    state.write_text(json.dumps(document))
    pin = pod("io2", cpus("io", None), namespace="storage",
              annotations={"weka.io/cores-ids": "0"})
    result = invoke(machine, kube_list(pin), "--state", str(state), "-o", "json")
    assert result.exit_code == 0, result.output
    (step,) = steps(result)
    (move,) = step["moves"]
    assert move["container"] == "shop/db/pg"
    topology = build_topology(DUAL_SOCKET_HT)
    assert topology.numa_nodes_of(CPUSet.parse(move["cpus"])) == CPUSet([1])


def test_workload_requests_show_their_kind_and_where_they_run(machine: Path) -> None:
    config = machine.parent / "config.toml"
    config.write_text('[cpus]\nreserved = "0,8"\n')
    result = invoke(machine, kube_list(
        pod("proxy", {"name": "proxy", "resources": {"requests": {"cpu": "100m"}}},
            namespace="kube-system"),
        pod("mixed", cpus("app", "2500m"), annotations={"mixed-cpus.nri-cpuset.io/pod": "true"}),
        pod("bursty", cpus("svc", "2"), annotations={"shared-cpus.nri-cpuset.io/pod": "true"}),
        pod("typo", cpus("x", "1"), annotations={"mixed-cpus.nri-cpuset.io/pod": "yes"}),
    ), "-o", "json", "--config", str(config))
    assert result.exit_code == 3, result.output  # the typo is refused
    by_name = {s["container"]: s for s in steps(result)}
    assert (by_name["proxy"]["kind"], by_name["proxy"]["cpus"]) == ("reserved", "0,8")
    mixed = by_name["app"]
    assert mixed["kind"] == "mixed"
    own = CPUSet.parse(mixed["cpus"]) - CPUSet.parse(by_name["svc"]["cpus"])
    assert len(own) == 2  # its exclusive CPUs: not in the pool the opted-out one runs on
    assert by_name["svc"]["kind"] == "shared"
    assert by_name["x"]["rejected"]["reason"] == "invalid-annotation"
    assert by_name["x"]["reason"] == ("annotation mixed-cpus.nri-cpuset.io/pod='yes' is invalid: "
                                      "expected 'true' or 'false'")


def test_a_saved_states_mixed_and_reserved_containers_are_seeded_as_they_ran(
        machine: Path) -> None:
    engine = CpusetEngine(build_topology(DUAL_SOCKET_HT))
    web = PodFacts(sandbox_id="s1", namespace="shop", name="web",
                   cgroup_parent="/kubepods/burstable/pods1")
    mixed = PodFacts(sandbox_id="s2", namespace="shop", name="batch",
                     cgroup_parent="/kubepods/pods2",
                     annotations={"mixed-cpus.nri-cpuset.io/pod": "true"})
    agent = PodFacts(sandbox_id="s3", namespace="ops", name="agent",
                     cgroup_parent="/kubepods/burstable/pods3",
                     annotations={"reserved-cpus.nri-cpuset.io/pod": "true"})
    engine.commit(engine.plan_create(web, ContainerFacts(id="c1", sandbox_id="s1", name="app")))
    engine.commit(engine.plan_create(mixed, ContainerFacts(
        id="c2", sandbox_id="s2", name="job", cpu_quota=250_000, cpu_period=100_000)))
    engine.commit(engine.plan_create(agent, ContainerFacts(id="c3", sandbox_id="s3",
                                                           name="agent")))
    own = engine.ledger.entries["c2"].cpus
    view = state_view.build(engine, runtime="containerd", synchronized=True, known={},
                            pending=frozenset())
    state = machine.parent / "live.json"
    state.write_bytes(state_view.encode(view))
    result = invoke(machine, kube_list(pod("new", cpus("c", "2"))), "--state", str(state),
                    "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["state_problems"] == []
    (new,) = steps(result)
    assert CPUSet.parse(new["cpus"]).isdisjoint(own)  # the mixed one kept its own CPUs
    # No CPU is reserved on this machine: the agent asking for them runs on the pool too.
    assert sorted(new["shared_pool"]["containers"]) == ["ops/agent/agent", "shop/batch/job",
                                                        "shop/web/app"]
