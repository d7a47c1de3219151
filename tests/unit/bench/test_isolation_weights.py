"""The isolation bench's kubelet weights: the shares a kubelet gives kubepods, the QoS tiers and
each pod, written where the cgroups exist and put back."""

from __future__ import annotations

from pathlib import Path

import pytest
from isolation_bench.weights import PodWeight, WeightWriter, kubelet_shares, shares_to_weight

from cpuset_core import QoS

PODS = [PodWeight(parent="/kubepods/besteffort/podA", qos=QoS.BEST_EFFORT, request_millis=0),
        PodWeight(parent="/kubepods/burstable/podB", qos=QoS.BURSTABLE, request_millis=1000),
        PodWeight(parent="/kubepods/burstable/podC", qos=QoS.BURSTABLE, request_millis=100),
        PodWeight(parent="/kubepods/podD", qos=QoS.GUARANTEED, request_millis=1000)]


def test_the_kubelets_shares_for_the_node_its_tiers_and_its_pods() -> None:
    assert kubelet_shares(PODS, 2000) == {
        "/kubepods": 2048, "/kubepods/besteffort": 2, "/kubepods/burstable": 1126,
        "/kubepods/besteffort/podA": 2, "/kubepods/burstable/podB": 1024,
        "/kubepods/burstable/podC": 102, "/kubepods/podD": 1024}


def test_parents_come_before_their_children() -> None:
    paths = list(kubelet_shares(PODS, 2000))
    assert paths[:3] == ["/kubepods", "/kubepods/besteffort", "/kubepods/burstable"]


def test_no_burstable_pods_leave_their_tier_at_the_minimum() -> None:
    assert kubelet_shares([], 2000)["/kubepods/burstable"] == 2


@pytest.mark.parametrize(("shares", "weight"), [(2, 1), (1024, 39), (262_144, 10_000)])
def test_v2_weights_are_runcs_conversion(shares: int, weight: int) -> None:
    assert shares_to_weight(shares) == weight


def make(root: Path, path: str, name: str, value: str) -> Path:
    directory = root / path.lstrip("/")
    directory.mkdir(parents=True)
    (directory / name).write_text(value + "\n")
    return directory / name


def test_v1_shares_are_written_and_put_back_and_missing_cgroups_skipped(tmp_path: Path) -> None:
    tier = make(tmp_path / "cpu", "/kubepods/besteffort", "cpu.shares", "1024")
    writer = WeightWriter(tmp_path)
    assert writer.apply({"/kubepods/besteffort": 2, "/kubepods/burstable": 1126}) == [
        "/kubepods/burstable"]
    assert tier.read_text() == "2"
    writer.apply({"/kubepods/besteffort": 5})  # the value kept is the first one seen
    writer.restore()
    assert tier.read_text() == "1024"


def test_v2_weights_are_written_as_cpu_weight(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu\n")
    pod = make(tmp_path, "/kubepods/podD", "cpu.weight", "100")
    writer = WeightWriter(tmp_path)
    writer.apply({"/kubepods/podD": 1024})
    assert pod.read_text() == "39"
    writer.restore()
    assert pod.read_text() == "100"


def test_a_cgroup_gone_before_the_restore_is_left_alone(tmp_path: Path) -> None:
    pod = make(tmp_path / "cpu", "/kubepods/podD", "cpu.shares", "1024")
    writer = WeightWriter(tmp_path)
    writer.apply({"/kubepods/podD": 2048})
    pod.unlink()
    writer.restore()
    assert not pod.exists()
