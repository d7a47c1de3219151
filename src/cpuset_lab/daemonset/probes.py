"""The container's ports as CRI ``PortMapping``s and its ``httpGet`` probes as the kubelet polls
them (a named probe port resolved through those ports)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.daemonset.manifest import (
    FieldReader,
    ManifestError,
    UntranslatedFieldError,
    as_int,
    as_list,
    as_str,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """An ``httpGet`` probe to poll: the kubelet GETs ``http://<pod IP>:<port><path>`` every
    ``period`` seconds, gives up on one try after ``timeout`` and acts after
    ``failure_threshold`` failures in a row (``success_threshold`` successes to recover)."""

    kind: str  # liveness, readiness or startup
    path: str
    port: int
    scheme: str = "HTTP"
    initial_delay: int = 0
    period: int = 10
    timeout: int = 1
    failure_threshold: int = 3
    success_threshold: int = 1

    def url(self, host: str) -> str:
        return f"{self.scheme.lower()}://{host}:{self.port}{self.path}"


_PROTOCOLS: Final = {"TCP": pb.TCP, "UDP": pb.UDP, "SCTP": pb.SCTP}


def port_mappings(reader: FieldReader, value: object, path: str) -> dict[str, pb.PortMapping]:
    """Each containerPort as the ``PortMapping`` the kubelet sends, by name (or number)."""
    ports: dict[str, pb.PortMapping] = {}
    for index, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{index}]"
        port = reader.fields(entry, entry_path, {"containerPort", "name", "protocol",
                                                 "hostPort", "hostIP"})
        protocol = as_str(port.get("protocol", "TCP"), f"{entry_path}.protocol")
        if protocol not in _PROTOCOLS:
            raise ManifestError(f"{entry_path}.protocol: unknown protocol {protocol!r}")
        number = as_int(port["containerPort"], f"{entry_path}.containerPort")
        ports[as_str(port.get("name", str(number)), f"{entry_path}.name")] = pb.PortMapping(
            protocol=_PROTOCOLS[protocol], container_port=number,
            host_port=as_int(port.get("hostPort", 0), f"{entry_path}.hostPort"),
            host_ip=as_str(port.get("hostIP", ""), f"{entry_path}.hostIP"))
    return ports


_PROBE_KINDS: Final = {"livenessProbe": "liveness", "readinessProbe": "readiness",
                       "startupProbe": "startup"}


def http_probe(reader: FieldReader, value: object, path: str, kind: str,
               ports: Mapping[str, pb.PortMapping]) -> Probe:
    """An ``httpGet`` probe with the API server's defaults; a named port resolved through the
    container's ports, as the kubelet does."""
    probe = reader.fields(value, path, {"httpGet", "initialDelaySeconds", "periodSeconds",
                                        "timeoutSeconds", "failureThreshold",
                                        "successThreshold"})
    if "httpGet" not in probe:
        raise UntranslatedFieldError(path, "only httpGet probes")
    get = reader.fields(probe["httpGet"], f"{path}.httpGet", {"path", "port", "scheme"})
    port = get["port"]
    if isinstance(port, str):
        if port not in ports:
            raise ManifestError(f"{path}.httpGet.port: no container port named {port!r}")
        port = ports[port].container_port

    def number(key: str, default: int) -> int:
        return as_int(probe.get(key, default), f"{path}.{key}")

    return Probe(kind=_PROBE_KINDS[kind],
                 path=as_str(get.get("path", "/"), f"{path}.httpGet.path"),
                 port=as_int(port, f"{path}.httpGet.port"),
                 scheme=as_str(get.get("scheme", "HTTP"), f"{path}.httpGet.scheme"),
                 initial_delay=number("initialDelaySeconds", 0),
                 period=number("periodSeconds", 10), timeout=number("timeoutSeconds", 1),
                 failure_threshold=number("failureThreshold", 3),
                 success_threshold=number("successThreshold", 1))
