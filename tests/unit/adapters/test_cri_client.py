"""The CRI client: kubelet-shaped helpers, and the wire (method paths, messages, errors) checked
against an in-process gRPC server (grpcio) that plays the runtime, through both transports: the
lab's grpcio one and the daemon's h2 one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from cpuset_adapters.cri.client import CriClient, CriError
from cpuset_adapters.cri.grpc_transport import GrpcTransport
from cpuset_adapters.cri.h2_unary import H2UnaryTransport
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_adapters.cri.proto import cri_pb2_grpc as pb_grpc
from cpuset_adapters.cri.results import Resources
from cpuset_adapters.cri.transport import UnaryTransport
from cpuset_adapters.grpc_status import StatusCode
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import Device, Mount, PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed, memory_bytes, milli_cpus

UID = "0f6a1c2e-1111-4d2b-9c3a-5e6f7a8b9c0d"


@pytest.mark.parametrize(("qos", "driver", "expected"), [
    (QosClass.GUARANTEED, "cgroupfs", f"/kubepods/pod{UID}"),
    (QosClass.BURSTABLE, "cgroupfs", f"/kubepods/burstable/pod{UID}"),
    ("BestEffort", "cgroupfs", f"/kubepods/besteffort/pod{UID}"),
    (QosClass.GUARANTEED, "systemd", f"kubepods-pod{UID.replace('-', '_')}.slice"),
    (QosClass.BURSTABLE, "systemd", f"kubepods-burstable-pod{UID.replace('-', '_')}.slice"),
])
def test_cgroup_parent_is_the_kubelets(qos: QosClass | str, driver: str, expected: str) -> None:
    assert cgroup_parent(qos, UID, driver=driver) == expected


def test_cgroup_parent_rejects_unknown_inputs() -> None:
    with pytest.raises(ValueError, match="driver"):
        cgroup_parent(QosClass.BURSTABLE, UID, driver="nope")
    with pytest.raises(ValueError, match="Gold"):
        cgroup_parent("Gold", UID)


@pytest.mark.parametrize(("cpus", "milli"), [
    (2, 2000), (0.5, 500), ("250m", 250), ("1.5", 1500), ("0.0001", 1), (0, 0), ("3", 3000),
])
def test_milli_cpus(cpus: float | str, milli: int) -> None:
    assert milli_cpus(cpus) == milli


@pytest.mark.parametrize("bad", ["", "two", "-1", "1.5x", "nan"])
def test_milli_cpus_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError, match="CPU quantity"):
        milli_cpus(bad)


@pytest.mark.parametrize(("memory", "size"), [
    (1024, 1024), ("128Mi", 128 * 2**20), ("1G", 10**9), ("1.5Gi", 3 * 2**29), ("64", 64),
])
def test_memory_bytes(memory: int | str, size: int) -> None:
    assert memory_bytes(memory) == size


def test_memory_bytes_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="memory quantity"):
        memory_bytes("lots")
    with pytest.raises(ValueError, match="negative"):
        memory_bytes(-1)


def test_whole_cpu_guaranteed_container_gets_n_periods_and_n_times_1024_shares() -> None:
    assert guaranteed(2, "256Mi") == Resources(cpu_period=100_000, cpu_quota=200_000,
                                               cpu_shares=2048, memory_limit=256 * 2**20)


def test_fractional_and_besteffort_resources_follow_the_kubelet() -> None:
    half = container_resources(cpu_request="500m", cpu_limit=0.5)
    assert (half.cpu_quota, half.cpu_shares) == (50_000, 512)
    burstable = container_resources(cpu_request="100m")  # no limit: unlimited quota
    assert (burstable.cpu_quota, burstable.cpu_shares, burstable.cpu_period) == (0, 102, 100_000)
    tiny = container_resources(cpu_request="1m", cpu_limit="1m")
    assert (tiny.cpu_quota, tiny.cpu_shares) == (1000, 2)  # kubelet minimums
    limit_only = container_resources(cpu_limit=1)  # request defaults to the limit
    assert limit_only.cpu_shares == 1024
    best_effort = container_resources()
    assert (best_effort.cpu_shares, best_effort.cpu_quota, best_effort.memory_limit) == (2, 0, 0)


TRANSPORTS: dict[str, Callable[[str], UnaryTransport]] = {
    "grpcio": GrpcTransport, "h2": H2UnaryTransport}

#: More than 64 KiB (the default HTTP/2 window) and than one 16 KiB frame: about 300 KB.
MANY = 2000
#: What the fake runtime says when a container is not there: characters grpc-message must
#: percent-encode (%, non-ASCII, a newline) and a "+" that must stay one.
NOT_FOUND = "container «ctr-9» not found: 100% gone + line\ntwo"
SLOW_TIMEOUT = 0.5


class _DryRunRuntime(pb_grpc.RuntimeServiceServicer):  # type: ignore[misc]
    """Records requests; fails CreateContainer the way containerd relays an NRI rejection."""

    def __init__(self) -> None:
        self.requests: list[object] = []
        self.release = threading.Event()  # ends a slow call when the test is over

    def Version(self, request: pb.VersionRequest, _context: object) -> pb.VersionResponse:  # noqa: N802
        self.requests.append(request)
        if request.version == "slow":
            self.release.wait(10 * SLOW_TIMEOUT)
        return pb.VersionResponse(version="0.1.0", runtime_name="fake",
                                  runtime_version="1.7.24", runtime_api_version="v1")

    def ListContainers(self, request: pb.ListContainersRequest,  # noqa: N802
                       _context: object) -> pb.ListContainersResponse:
        self.requests.append(request)
        return pb.ListContainersResponse(containers=[
            pb.Container(id=f"{n:064x}", pod_sandbox_id=f"pod-{n % 7}", state=pb.CONTAINER_RUNNING,
                         metadata=pb.ContainerMetadata(name=f"app-{n}"), created_at=10**18 + n,
                         labels={"io.kubernetes.pod.namespace": "default",
                                 "io.kubernetes.container.name": f"app-{n}"})
            for n in range(MANY)])
    def RunPodSandbox(self, request: pb.RunPodSandboxRequest,  # noqa: N802
                      _context: object) -> pb.RunPodSandboxResponse:
        self.requests.append(request)
        return pb.RunPodSandboxResponse(pod_sandbox_id="pod-1")

    def CreateContainer(self, request: pb.CreateContainerRequest,  # noqa: N802
                        context: grpc.ServicerContext) -> pb.CreateContainerResponse:
        self.requests.append(request)
        if request.config.metadata.name == "rejected":
            context.abort(grpc.StatusCode.UNKNOWN,
                          "failed to create containerd container: NRI plugin rejected: no CPUs")
        return pb.CreateContainerResponse(container_id="ctr-1")

    def ContainerStatus(self, request: pb.ContainerStatusRequest,  # noqa: N802
                        context: grpc.ServicerContext) -> pb.ContainerStatusResponse:
        self.requests.append(request)
        if request.container_id == "ctr-9":
            context.abort(grpc.StatusCode.NOT_FOUND, NOT_FOUND)
        status = pb.ContainerStatus(id=request.container_id, state=pb.CONTAINER_RUNNING,
                                    metadata=pb.ContainerMetadata(name="app"), created_at=11,
                                    started_at=12, finished_at=0)
        status.resources.linux.cpuset_cpus = "1"
        info = '{"pid": 4242, "runtimeSpec": {"linux": {"cgroupsPath": "/kubepods/x/ctr-1"}}}'
        return pb.ContainerStatusResponse(status=status, info={"info": info})


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> Callable[[str], UnaryTransport]:
    """Each test runs once per transport."""
    return TRANSPORTS[request.param]


@pytest.fixture
def fake(tmp_path: Path, transport: Callable[[str], UnaryTransport],
         ) -> Iterator[tuple[KubeletClient, _DryRunRuntime]]:
    runtime = _DryRunRuntime()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    sock = tmp_path / "cri.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    client = KubeletClient(sock, timeout=10, transport=transport(str(sock)))
    try:
        yield client, runtime
    finally:
        runtime.release.set()
        client.close()
        server.stop(None)


def test_the_lab_client_speaks_grpcio_and_the_default_client_h2(tmp_path: Path) -> None:
    assert isinstance(KubeletClient(tmp_path / "cri.sock").transport, GrpcTransport)
    assert isinstance(CriClient(tmp_path / "cri.sock").transport, H2UnaryTransport)


def test_client_speaks_the_cri_wire(fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, runtime = fake
    assert client.version().runtime_version == "1.7.24"
    pod = client.run_pod(PodSpec(name="web", namespace="prod", uid=UID, annotations={"a": "b"},
                                 cgroup_parent=cgroup_parent(QosClass.GUARANTEED, UID)))
    assert pod == "pod-1"
    cid = client.create_container(pod, None, "app", "img:1", resources=guaranteed(1, "64Mi"),
                                  cpuset_cpus="ignored when resources are given",
                                  command=["/bin/sleep", "1"])
    assert cid == "ctr-1"
    run, create = runtime.requests[1], runtime.requests[2]
    assert isinstance(run, pb.RunPodSandboxRequest)
    assert run.config.metadata.namespace == "prod"
    assert run.config.linux.cgroup_parent == f"/kubepods/pod{UID}"
    assert run.config.linux.security_context.namespace_options.network == pb.NODE
    assert dict(run.config.annotations) == {"a": "b"}
    assert isinstance(create, pb.CreateContainerRequest)
    assert create.sandbox_config == run.config  # kubelet resends the pod config
    assert create.config.linux.resources.cpu_quota == 100_000
    assert create.config.linux.resources.cpu_shares == 1024
    assert create.config.linux.resources.cpuset_cpus == ""
    assert list(create.config.command) == ["/bin/sleep", "1"]
    assert create.config.labels["io.kubernetes.container.name"] == "app"
    assert client.cgroup_parents == {f"/kubepods/pod{UID}"}

    status = client.container_status(cid)
    assert (status.running, status.pid, status.cgroups_path) == (True, 4242, "/kubepods/x/ctr-1")
    assert status.resources is not None
    assert status.resources.cpuset_cpus == "1"
    assert (status.created_at, status.started_at, status.finished_at) == (11, 12, 0)


def _cri_devices(config: bytes) -> list[tuple[str, str, str]]:
    """``ContainerConfig.devices`` of an encoded config, read with the layout of the real CRI
    proto (``repeated Device devices = 8``; ``Device``: container_path 1, host_path 2,
    permissions 3), which the product's subset lacks."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    layout = descriptor_pb2.FileDescriptorProto(name="cri_devices.proto", package="cri",
                                                syntax="proto3")
    device = layout.message_type.add(name="Device")
    for number, name in enumerate(("container_path", "host_path", "permissions"), start=1):
        device.field.add(name=name, number=number, type=field.TYPE_STRING,
                         label=field.LABEL_OPTIONAL)
    layout.message_type.add(name="ContainerConfig").field.add(
        name="devices", number=8, type=field.TYPE_MESSAGE, type_name=".cri.Device",
        label=field.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(layout)
    decoded = message_factory.GetMessageClass(pool.FindMessageTypeByName("cri.ContainerConfig"))()
    decoded.ParseFromString(config)
    return [(d.container_path, d.host_path, d.permissions) for d in decoded.devices]


def test_devices_reach_the_runtime_as_cri_container_config_devices(
        fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, runtime = fake
    pod = client.run_pod(PodSpec(name="io", uid=UID))
    client.create_container(pod, None, "app", "img:1", resources=guaranteed(2, "64Mi"), devices=[
        Device(host_path="/dev/nvme1n1"),
        Device(host_path="/dev/nvme0n1", container_path="/dev/disk", permissions="r")])
    create = runtime.requests[-1]
    assert isinstance(create, pb.CreateContainerRequest)
    assert _cri_devices(create.config.SerializeToString()) == [
        ("/dev/nvme1n1", "/dev/nvme1n1", "rw"), ("/dev/disk", "/dev/nvme0n1", "r")]
    assert create.config.linux.resources.cpu_quota == 200_000  # the rest of the config intact
    assert create.config.metadata.name == "app"


def test_mounts_reach_the_runtime_as_cri_container_config_mounts(
        fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, runtime = fake
    pod = client.run_pod(PodSpec(name="probe", uid=UID))
    client.create_container(pod, None, "app", "img:1", mounts=[
        Mount(container_path="/probe", host_path="/var/tmp/build"),
        Mount(container_path="/io", host_path="/var/tmp/io", readonly=False)])
    create = runtime.requests[-1]
    assert isinstance(create, pb.CreateContainerRequest)
    assert [(m.container_path, m.host_path, m.readonly) for m in create.config.mounts] == [
        ("/probe", "/var/tmp/build", True), ("/io", "/var/tmp/io", False)]


def test_runtime_errors_keep_code_and_message(fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, _ = fake
    pod = client.run_pod(PodSpec(name="web"))
    with pytest.raises(CriError) as caught:
        client.create_container(pod, None, "rejected", "img:1")
    err = caught.value
    assert (err.method, err.code, err.code_name) == ("CreateContainer", StatusCode.UNKNOWN,
                                                     "UNKNOWN")
    assert "NRI plugin rejected: no CPUs" in err.details
    assert "CreateContainer" in str(err)
    with pytest.raises(CriError) as caught:
        client.list_pods()  # not implemented by the fake
    assert caught.value.code_name == "UNIMPLEMENTED"


def test_unreachable_runtime_is_a_cri_error(
        tmp_path: Path, transport: Callable[[str], UnaryTransport]) -> None:
    sock = str(tmp_path / "none.sock")
    with (KubeletClient(sock, timeout=1, transport=transport(sock)) as client,
          pytest.raises(CriError) as caught):
        client.version()
    assert caught.value.code_name == "UNAVAILABLE"
    assert caught.value.method == "Version"


def test_a_response_of_many_frames_beyond_the_default_window_arrives_whole(
        fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, _ = fake
    size = len(client.call("RuntimeService", "ListContainers", pb.ListContainersRequest(),
                           pb.ListContainersResponse).SerializeToString())
    assert size > 4 * 65_535
    containers = client.list_containers()
    assert len(containers) == MANY
    assert containers[-1].id == f"{MANY - 1:064x}"
    assert containers[-1].created_at == 10**18 + MANY - 1
    assert containers[-1].labels["io.kubernetes.container.name"] == f"app-{MANY - 1}"


def test_a_runtime_slower_than_the_timeout_is_deadline_exceeded(
        fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, _ = fake
    with pytest.raises(CriError) as caught:
        client.call("RuntimeService", "Version", pb.VersionRequest(version="slow"),
                    pb.VersionResponse, timeout=SLOW_TIMEOUT)
    # The fake answers, successfully, only after 10 timeouts: the code alone shows the client
    # gave up at its deadline (how soon after it is no verdict on a loaded machine).
    assert caught.value.code_name == "DEADLINE_EXCEEDED"
    assert client.version().runtime_version == "1.7.24"  # the next call is not affected


def test_the_runtimes_message_is_percent_decoded(
        fake: tuple[KubeletClient, _DryRunRuntime]) -> None:
    client, _ = fake
    with pytest.raises(CriError) as caught:
        client.container_status("ctr-9")
    assert (caught.value.code_name, caught.value.details) == ("NOT_FOUND", NOT_FOUND)
