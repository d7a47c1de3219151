"""The NodeResourceTopology client against a fake API server on 127.0.0.1: a merge patch, a
creation when there is no object, and every failure named by a stable reason; and where the
server and credentials come from (service account, kubeconfig)."""

# ruff: noqa: S105, S107 - the tokens here are test strings sent to a fake server

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.kubernetes.api_client import ApiError, TopologyApi
from cpuset_adapters.kubernetes.credentials import (
    CredentialsError,
    Endpoint,
    from_kubeconfig,
    in_cluster,
)
from tests.support.kube_api import CERT, COLLECTION, KEY, serve


def plain(port: int, token: str | None = "t0k") -> Endpoint:
    return Endpoint(host="127.0.0.1", port=port, context=None, token=lambda: token,
                    source="test")


def nrt(name: str = "node-a", available: int = 4) -> dict[str, Any]:
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": name},
            "zones": [{"name": "node-0", "type": "Node", "resources": [
                {"name": "cpu", "capacity": 8, "allocatable": 8, "available": available}]}]}


def test_the_first_write_creates_the_object_and_later_ones_patch_it() -> None:
    with serve() as api:
        client = TopologyApi(plain(api.port))
        assert client.apply(nrt(available=4)) == "created"
        assert client.apply(nrt(available=2)) == "updated"
        assert api.objects["node-a"]["zones"][0]["resources"][0]["available"] == 2
        assert api.methods() == ["PATCH", "POST", "PATCH"]
        patch = api.requests[-1]
        assert patch.path == f"{COLLECTION}/node-a"
        assert patch.content_type == "application/merge-patch+json"
        assert patch.token == "t0k"
        client.close()


def test_an_existing_object_is_patched_without_being_read_or_created() -> None:
    with serve() as api:
        api.objects["node-a"] = nrt(available=8)
        assert TopologyApi(plain(api.port)).apply(nrt(available=1)) == "updated"
        assert api.methods() == ["PATCH"]


def test_an_object_created_between_the_patch_and_the_creation_is_patched() -> None:
    with serve("created-meanwhile") as api:
        assert TopologyApi(plain(api.port)).apply(nrt(available=3)) == "updated"
        assert api.methods() == ["PATCH", "POST", "PATCH"]
        assert api.objects["node-a"]["zones"][0]["resources"][0]["available"] == 3


def test_a_kept_alive_connection_the_server_dropped_is_replaced_without_an_error() -> None:
    with serve("drop-idle") as api:
        client = TopologyApi(plain(api.port))
        assert client.apply(nrt(available=4)) == "created"
        assert client.apply(nrt(available=2)) == "updated"  # the first socket is gone
        assert client.apply(nrt(available=1)) == "updated"
        assert api.objects["node-a"]["zones"][0]["resources"][0]["available"] == 1


@pytest.mark.parametrize(("mode", "reason", "status"), [
    ("forbidden", "forbidden", 403),
    ("crd-missing", "crd-missing", 404),
    ("conflict", "conflict", 409),
    ("server-error", "server-error", 500),
])
def test_a_refusal_is_an_api_error_with_a_stable_reason(mode: str, reason: str,
                                                        status: int) -> None:
    with serve(mode) as api, pytest.raises(ApiError) as caught:
        TopologyApi(plain(api.port)).apply(nrt())
    assert (caught.value.reason, caught.value.status) == (reason, status)
    assert "fake" in caught.value.detail or "CRD" in caught.value.detail


def test_a_missing_crd_is_named() -> None:
    with serve("crd-missing") as api:
        with pytest.raises(ApiError, match="is the NodeResourceTopology CRD installed"):
            TopologyApi(plain(api.port)).apply(nrt())
        assert api.methods() == ["PATCH", "POST"]


def test_a_closed_port_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(ApiError) as caught:
            TopologyApi(plain(port)).apply(nrt())
    assert caught.value.reason == "unreachable"


def test_a_slow_server_times_out() -> None:
    with serve("slow") as api, pytest.raises(ApiError) as caught:
        TopologyApi(plain(api.port), timeout=0.2).apply(nrt())
    assert caught.value.reason == "timeout"


def test_an_unreadable_token_is_a_credentials_error(tmp_path: Path) -> None:
    def token() -> str:
        return (tmp_path / "gone").read_text()
    endpoint = Endpoint(host="127.0.0.1", port=1, context=None, token=token, source="test")
    with pytest.raises(ApiError) as caught:
        TopologyApi(endpoint).apply(nrt())
    assert caught.value.reason == "credentials"


def test_tls_with_the_cluster_ca_and_a_kubeconfig_token(tmp_path: Path) -> None:
    with serve(tls=True) as api:
        kubeconfig = _kubeconfig(tmp_path, f"https://127.0.0.1:{api.port}",
                                 cluster={"certificate-authority": str(CERT)},
                                 user={"token": "lab-token"})
        endpoint = from_kubeconfig(kubeconfig)
        assert TopologyApi(endpoint).apply(nrt()) == "created"
        assert api.requests[-1].token == "lab-token"


def test_a_server_whose_certificate_the_ca_does_not_sign_is_unreachable(
        tmp_path: Path) -> None:
    with serve(tls=True) as api:
        kubeconfig = _kubeconfig(tmp_path, f"https://127.0.0.1:{api.port}",
                                 user={"token": "lab-token"})  # the system's CAs only
        with pytest.raises(ApiError) as caught:
            TopologyApi(from_kubeconfig(kubeconfig)).apply(nrt())
        assert caught.value.reason == "unreachable"
        assert "CERTIFICATE_VERIFY_FAILED" in caught.value.detail
        assert api.requests == []


def test_embedded_ca_and_client_certificate_data(tmp_path: Path) -> None:
    data = {"certificate-authority-data": base64.b64encode(CERT.read_bytes()).decode()}
    user = {"client-certificate-data": base64.b64encode(CERT.read_bytes()).decode(),
            "client-key-data": base64.b64encode(KEY.read_bytes()).decode()}
    with serve(tls=True) as api:
        endpoint = from_kubeconfig(_kubeconfig(tmp_path, f"https://127.0.0.1:{api.port}",
                                               cluster=data, user=user))
        assert TopologyApi(endpoint).apply(nrt()) == "created"
        assert api.requests[-1].token == ""


def test_a_token_file_is_read_again_for_every_request(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    with serve() as api:
        endpoint = from_kubeconfig(_kubeconfig(tmp_path, f"http://127.0.0.1:{api.port}",
                                               user={"tokenFile": "token"}))
        client = TopologyApi(endpoint)
        client.apply(nrt())
        token.write_text("rotated\n")
        client.apply(nrt())
        assert [r.token for r in api.requests] == ["first", "first", "rotated"]


@pytest.mark.parametrize("user", [{"exec": {"command": "aws"}}, {"auth-provider": {}}])
def test_credential_plugins_are_refused_by_name(tmp_path: Path, user: dict[str, Any]) -> None:
    with pytest.raises(CredentialsError, match="plugins are not supported"):
        from_kubeconfig(_kubeconfig(tmp_path, "https://127.0.0.1:6443", user=user))


def test_a_kubeconfig_without_a_current_context_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(CredentialsError, match="no usable current context"):
        from_kubeconfig(path)


def test_a_json_kubeconfig_is_read_without_importing_yaml(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": {"server": "http://127.0.0.1:8080"}}],
        "users": [{"name": "lab", "user": {"token": "t0k"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
    probe = ("import sys; from cpuset_adapters.kubernetes.credentials import from_kubeconfig; "
             "e = from_kubeconfig(sys.argv[1]); "
             "print(e.host, e.port, e.token(), 'yaml' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                            text=True, check=True, timeout=60)
    assert result.stdout.split() == ["127.0.0.1", "8080", "t0k", "False"]


@pytest.mark.parametrize(("text", "what"), [("{\"current-context\": ", "Expecting value"),
                                            ("clusters: [\n", "while parsing")])
def test_a_kubeconfig_that_does_not_parse_is_refused_with_the_parsers_words(
        tmp_path: Path, text: str, what: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(CredentialsError, match=f"kubeconfig {path}: .*{what}"):
        from_kubeconfig(path)


def test_in_cluster_reads_the_service_account(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(CERT.read_bytes())
    endpoint = in_cluster({"KUBERNETES_SERVICE_HOST": "10.0.0.1",
                           "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    assert (endpoint.host, endpoint.port, endpoint.token()) == ("10.0.0.1", 443, "sa-token")
    assert endpoint.context is not None


@pytest.mark.parametrize(("environ", "files", "message"), [
    ({}, True, "not in a cluster"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, False,
     "no service account token"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "https"}, True,
     "is not a port"),
])
def test_in_cluster_says_what_is_missing(tmp_path: Path, environ: dict[str, str], files: bool,
                                         message: str) -> None:
    if files:
        (tmp_path / "token").write_text("t")
        (tmp_path / "ca.crt").write_bytes(CERT.read_bytes())
    with pytest.raises(CredentialsError, match=message):
        in_cluster(environ, tmp_path)


def _kubeconfig(tmp_path: Path, server: str, *, cluster: dict[str, Any] | None = None,
                user: dict[str, Any] | None = None) -> Path:
    import yaml

    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "lab", "user": user or {}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
    return path
