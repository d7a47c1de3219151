"""Classification: the QoS a kubelet cgroup parent encodes, and annotated / integer / shared."""

from __future__ import annotations

import re

import pytest

from cpuset_core.classify import QoS, classify, qos_from_cgroup_parent
from cpuset_core.cpuset import CPUSet
from cpuset_core.errors import (
    AdmissionError,
    CpuListSyntaxError,
    InvalidAnnotationError,
    PinNotAllowedError,
)
from cpuset_core.model import ContainerFacts, Kind, PodFacts
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from tests.builders.facts import PERIOD, container, pod
from tests.unit.core.topologies import cpus

UID = "0f1e2d3c-aaaa-4bbb-8ccc-0123456789ab"
SD_UID = UID.replace("-", "_")  # the systemd driver escapes "-" in slice names
DEFAULTS = Settings()
KEY = DEFAULT_PIN_ANNOTATION


# -- QoS from the cgroup parent ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "qos"),
    [
        (f"/kubepods/pod{UID}", QoS.GUARANTEED),
        (f"/kubepods/burstable/pod{UID}", QoS.BURSTABLE),
        (f"/kubepods/besteffort/pod{UID}", QoS.BEST_EFFORT),
        (f"kubepods/pod{UID}", QoS.GUARANTEED),
        (f"kubepods/burstable/pod{UID}", QoS.BURSTABLE),
        (f"kubepods/besteffort/pod{UID}", QoS.BEST_EFFORT),
        (f"/kubelet/kubepods/pod{UID}", QoS.GUARANTEED),
        (f"/kubelet/kubepods/burstable/pod{UID}", QoS.BURSTABLE),
        (f"/kubelet/kubepods/besteffort/pod{UID}", QoS.BEST_EFFORT),
        (f"/kubepods/burstable/pod{UID}/", QoS.BURSTABLE),
    ],
)
def test_cgroupfs_parent_encodes_the_qos_class(parent: str, qos: QoS) -> None:
    assert qos_from_cgroup_parent(parent) is qos


@pytest.mark.parametrize(
    ("parent", "qos"),
    [
        (f"kubepods-pod{SD_UID}.slice", QoS.GUARANTEED),
        (f"kubepods-burstable-pod{SD_UID}.slice", QoS.BURSTABLE),
        (f"kubepods-besteffort-pod{SD_UID}.slice", QoS.BEST_EFFORT),
        (f"/kubepods.slice/kubepods-pod{SD_UID}.slice", QoS.GUARANTEED),
        (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SD_UID}.slice",
         QoS.BURSTABLE),
        (f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SD_UID}.slice",
         QoS.BEST_EFFORT),
    ],
)
def test_systemd_parent_encodes_the_qos_class(parent: str, qos: QoS) -> None:
    assert qos_from_cgroup_parent(parent) is qos


@pytest.mark.parametrize(
    "parent",
    [
        "",
        "/",
        "/system.slice/foo",
        "/system.slice/foo.slice",
        "/kubepods/other",
        "/kubepods",
        "kubepods.slice",
        "/kubepods.slice/kubepods-burstable.slice",
        f"/burstable/pod{UID}",
        f"/kubepods/guaranteed/pod{UID}",
        f"/docker/{UID}",
    ],
)
def test_unknown_cgroup_parent_shapes_are_unknown_qos(parent: str) -> None:
    assert qos_from_cgroup_parent(parent) is QoS.UNKNOWN


# -- annotated ---------------------------------------------------------------------------------


@pytest.mark.parametrize("qos", ["guaranteed", "burstable", "besteffort", "unknown"])
@pytest.mark.parametrize("cpu_limit", [None, 1.5, 2.0])
def test_annotated_pod_is_annotated_whatever_its_qos_and_limits(
        qos: str, cpu_limit: float | None) -> None:
    parent = "/system.slice/foo" if qos == "unknown" else None
    p = pod("web", qos=qos, annotations={KEY: "0,2-3,8"}, cgroup_parent=parent)
    result = classify(p, container("c1", p, cpu_limit=cpu_limit), DEFAULTS)
    assert result.kind is Kind.ANNOTATED
    assert result.pins == cpus("0,2-3,8")
    assert result.request == 0
    assert f"{KEY}=0,2-3,8" in result.reason


@pytest.mark.parametrize(("value", "pins"), [
    ("0", "0"),
    ("0,2-3,8", "0,2-3,8"),
    ("3-3", "3"),
    ("4-7,0-1", "0-1,4-7"),
    (" 1-2\n", "1-2"),
])
def test_valid_annotation_values_give_their_cpus(value: str, pins: str) -> None:
    p = pod("web", annotations={KEY: value})
    assert classify(p, container("c1", p), DEFAULTS).pins == cpus(pins)


@pytest.mark.parametrize("value", ["", "a", "1-", "3-1", "1, 2", "0,,1", "-1", "99999", "0;1"])
def test_invalid_annotation_raises_naming_key_value_position_and_container(value: str) -> None:
    with pytest.raises(CpuListSyntaxError) as syntax:
        CPUSet.parse(value)
    p = pod("web", qos="burstable", annotations={KEY: value})
    with pytest.raises(InvalidAnnotationError) as caught:
        classify(p, container("c1", p, name="app"), DEFAULTS)
    err = caught.value
    assert isinstance(err, AdmissionError)
    assert err.reason == "invalid-annotation"
    assert (err.key, err.value, err.subject) == (KEY, value, "ns/web/app")
    message = str(err)
    assert "ns/web/app" in message
    assert KEY in message
    assert repr(value) in message
    assert f"at position {syntax.value.position}" in message
    assert isinstance(err.__cause__, CpuListSyntaxError)


def test_custom_annotation_key_is_the_only_one_read() -> None:
    custom = Settings(pin_annotation="example.com/cpus")
    annotated = pod("a", qos="burstable", annotations={"example.com/cpus": "4-5"})
    default_key_only = pod("b", qos="burstable", annotations={KEY: "4-5"})

    result = classify(annotated, container("c1", annotated), custom)
    assert (result.kind, result.pins) == (Kind.ANNOTATED, cpus("4-5"))
    assert "example.com/cpus=4-5" in result.reason
    assert classify(default_key_only, container("c2", default_key_only), custom).kind \
        is Kind.SHARED


def test_invalid_value_under_a_custom_key_names_that_key() -> None:
    custom = Settings(pin_annotation="example.com/cpus")
    p = pod("a", annotations={"example.com/cpus": "x"})
    with pytest.raises(InvalidAnnotationError, match=re.escape("example.com/cpus='x'")) as caught:
        classify(p, container("c1", p), custom)
    assert caught.value.key == "example.com/cpus"


# -- integer -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("quota", "period", "count"), [
    (100_000, 100_000, 1),
    (200_000, 100_000, 2),
    (400_000, 100_000, 4),
    (50_000, 50_000, 1),
    (1_600_000, 100_000, 16),
])
def test_guaranteed_container_with_whole_cpu_limit_is_integer(
        quota: int, period: int, count: int) -> None:
    p = pod("db")
    c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main", cpu_quota=quota,
                       cpu_period=period)
    result = classify(p, c, DEFAULTS)
    assert result.kind is Kind.INTEGER
    assert result.request == count
    assert result.pins is None
    assert "Guaranteed" in result.reason


def test_guaranteed_pod_under_the_systemd_driver_is_integer_too() -> None:
    p = pod("db", cgroup_parent=f"/kubepods.slice/kubepods-pod{SD_UID}.slice")
    assert classify(p, container("c1", p, cpu_limit=3), DEFAULTS).request == 3


# -- integer without quota: the plugin lifted it, or the kubelet never set it -----------------


@pytest.mark.parametrize(("quota", "shares", "count"), [
    (-1, 2048, 2), (None, 1024, 1), (-1, 16_384, 16), (0, 4096, 4), (-1, 261_120, 255),
])
def test_guaranteed_container_without_quota_is_integer_by_its_cpu_shares(
        quota: int | None, shares: int, count: int) -> None:
    p = pod("db")
    c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main", cpu_quota=quota,
                       cpu_period=PERIOD, cpu_shares=shares)
    result = classify(p, c, DEFAULTS)
    assert (result.kind, result.request) == (Kind.INTEGER, count)
    assert "by cpu.shares" in result.reason


@pytest.mark.parametrize("shares", [1536, 1023, 1025, 2, 262_144])
def test_guaranteed_container_without_quota_and_shares_of_no_whole_request_is_shared(
        shares: int) -> None:
    # 1500m, 999m, 1001m, the kubelet's minimum, and its ceiling (256 CPUs and more).
    p = pod("db")
    c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main", cpu_quota=-1,
                       cpu_period=PERIOD, cpu_shares=shares)
    result = classify(p, c, DEFAULTS)
    assert result.kind is Kind.SHARED
    assert f"cpu.shares {shares}" in result.reason


def test_shares_say_whole_cpus_exactly_for_whole_requests_below_the_ceiling() -> None:
    # Requests the kubelet turns into shares under its ceiling (every one up to 20 CPUs,
    # then those next to each whole CPU): a container without quota is integer exactly when
    # its request (= its limit, Guaranteed) is whole CPUs.
    p = pod("db")
    near_whole = (whole + step for whole in range(20_000, 256_000, 1000) for step in range(-3, 4))
    for millis in (*range(1, 20_000), *near_whole):
        c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main",
                           cpu_shares=max(2, millis * 1024 // 1000))
        result = classify(p, c, DEFAULTS)
        expected = (Kind.INTEGER, millis // 1000) if millis % 1000 == 0 else (Kind.SHARED, 0)
        assert (result.kind, result.request) == expected, millis


def test_a_burstable_container_without_quota_is_shared_whatever_its_shares() -> None:
    p = pod("web", qos="burstable")
    c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main", cpu_quota=-1,
                       cpu_period=PERIOD, cpu_shares=2048)
    assert classify(p, c, DEFAULTS).kind is Kind.SHARED


# -- shared ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cpu_limit", "millis"), [(1.5, "1500m"), (0.5, "500m"), (2.25, "2250m")])
def test_guaranteed_container_with_fractional_limit_is_shared(cpu_limit: float,
                                                               millis: str) -> None:
    p = pod("db")
    result = classify(p, container("c1", p, cpu_limit=cpu_limit), DEFAULTS)
    assert result.kind is Kind.SHARED
    assert result.request == 0
    assert millis in result.reason


@pytest.mark.parametrize(("quota", "period"), [
    (None, PERIOD), (200_000, None), (None, None), (0, PERIOD), (-1, PERIOD), (200_000, 0),
    (200_000, -100_000),
])
def test_guaranteed_container_without_a_usable_quota_is_shared(quota: int | None,
                                                                period: int | None) -> None:
    p = pod("db")
    c = ContainerFacts(id="c1", sandbox_id=p.sandbox_id, name="main", cpu_quota=quota,
                       cpu_period=period)
    result = classify(p, c, DEFAULTS)
    assert result.kind is Kind.SHARED
    assert "without a CPU limit" in result.reason


@pytest.mark.parametrize(("qos", "parent", "label"), [
    ("burstable", None, "Burstable"),
    ("besteffort", None, "BestEffort"),
    ("guaranteed", "/system.slice/foo", "Unknown"),
    ("guaranteed", "", "Unknown"),
])
def test_non_guaranteed_pod_is_shared_even_with_a_whole_cpu_limit(qos: str, parent: str | None,
                                                                  label: str) -> None:
    p = pod("web", qos=qos, cgroup_parent=parent)
    result = classify(p, container("c1", p, cpu_limit=2), DEFAULTS)
    assert result.kind is Kind.SHARED
    assert label in result.reason


def test_container_of_an_unknown_pod_is_shared() -> None:
    c = ContainerFacts(id="c1", sandbox_id="gone", name="main", cpu_quota=200_000,
                       cpu_period=PERIOD)
    result = classify(None, c, DEFAULTS)
    assert result.kind is Kind.SHARED
    assert "pod unknown" in result.reason


def test_guaranteed_pod_mixing_whole_and_fractional_containers_classifies_each_on_its_own() -> None:
    p = pod("mixed")
    whole = classify(p, container("c1", p, cpu_limit=2, name="worker"), DEFAULTS)
    fractional = classify(p, container("c2", p, cpu_limit=1.5, name="sidecar"), DEFAULTS)
    assert (whole.kind, whole.request) == (Kind.INTEGER, 2)
    assert fractional.kind is Kind.SHARED
    assert "1500m" in fractional.reason


@pytest.mark.parametrize(("cpu_limit", "kind"), [(2, Kind.INTEGER), (0.5, Kind.SHARED)])
def test_init_containers_follow_the_same_rule(cpu_limit: float, kind: Kind) -> None:
    """Init containers reach the runtime through the same CreateContainer event and carry the
    same fields as app containers (``ContainerFacts`` has no "init" flag), so they are classified
    by exactly the same per-container rule: an init container with a whole CPU limit in a
    Guaranteed pod gets exclusive CPUs, a fractional one runs in the shared pool."""
    p = pod("job")
    init = container("init-1", p, cpu_limit=cpu_limit, name="init-migrate")
    assert classify(p, init, DEFAULTS).kind is kind


class TestPinNamespaces:
    """Who may pin: ``Settings.pin_namespaces`` (exact names or globs; default everyone)."""

    @staticmethod
    def _pod(namespace: str) -> PodFacts:
        return PodFacts(sandbox_id="s", namespace=namespace, name="p",
                        annotations={DEFAULT_PIN_ANNOTATION: "1"},
                        cgroup_parent="/kubepods/burstable/pods")

    def test_everyone_may_pin_by_default(self) -> None:
        decision = classify(self._pod("anything"), ContainerFacts(id="c", sandbox_id="s",
                                                                  name="app"), Settings())
        assert decision.kind is Kind.ANNOTATED

    @pytest.mark.parametrize("namespace", ["weka", "weka-prod", "storage"])
    def test_exact_and_glob_patterns_admit(self, namespace: str) -> None:
        settings = Settings(pin_namespaces=("weka*", "storage"))
        decision = classify(self._pod(namespace), ContainerFacts(id="c", sandbox_id="s",
                                                                 name="app"), settings)
        assert decision.pins == CPUSet.parse("1")

    def test_other_namespace_is_refused_with_a_clear_error(self) -> None:
        settings = Settings(pin_namespaces=("weka*", "storage"))
        with pytest.raises(PinNotAllowedError) as info:
            classify(self._pod("default"), ContainerFacts(id="c", sandbox_id="s", name="app"),
                     settings)
        assert info.value.reason == "pin-namespace-not-allowed"
        assert str(info.value) == ("default/p/app: namespace 'default' may not use the annotation "
                                   "weka.io/cores-ids (pin_namespaces allows: weka*, storage)")

    def test_globs_are_case_sensitive_and_whole_name(self) -> None:
        settings = Settings(pin_namespaces=("weka",))
        assert settings.may_pin("weka")
        assert not settings.may_pin("Weka")
        assert not settings.may_pin("weka-prod")

    def test_empty_allowlist_refuses_everyone(self) -> None:
        assert not Settings(pin_namespaces=()).may_pin("default")
