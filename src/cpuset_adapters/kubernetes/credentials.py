"""Where the API server is and how to prove who we are: the pod's service account (in-cluster)
or a kubeconfig file (a lab). Only what the publisher needs: a bearer token (re-read before
every request, since the kubelet rotates projected tokens) or a client certificate, and the
server's CA; kubeconfig ``exec`` and ``auth-provider`` plugins are refused by name.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import ssl

SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class CredentialsError(ValueError):
    """No usable API server address or credentials; the message says what is missing."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An API server and the credentials for it."""

    host: str
    port: int
    context: ssl.SSLContext | None
    """TLS settings; ``None`` for plain HTTP (tests, a local proxy)."""
    token: Callable[[], str | None]
    """The bearer token to send now (read afresh), or ``None``."""
    source: str
    """Where this came from, for the start log."""


def in_cluster(environ: Mapping[str, str], directory: Path = SERVICE_ACCOUNT) -> Endpoint:
    """The pod's own service account: ``KUBERNETES_SERVICE_HOST``/``_PORT``, the projected
    token and CA under ``directory``. Raises :class:`CredentialsError`."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise CredentialsError("not in a cluster: KUBERNETES_SERVICE_HOST and "
                               "KUBERNETES_SERVICE_PORT are not set (name a kubeconfig instead)")
    ca, token = directory / "ca.crt", directory / "token"
    if not token.exists():
        raise CredentialsError(f"{token} does not exist: the pod has no service account token "
                               "(automountServiceAccountToken, or a projected token volume)")
    import ssl  # noqa: PLC0415 - TLS is loaded when it is asked for (decision 56)

    try:
        context = ssl.create_default_context(cafile=str(ca))
    except OSError as exc:
        raise CredentialsError(f"{ca}: {exc}") from exc
    return Endpoint(host=host, port=_port(port), context=context, token=_file_token(token),
                    source=f"in-cluster service account ({host}:{port})")


def from_kubeconfig(path: str | os.PathLike[str]) -> Endpoint:
    """The current context of the kubeconfig at ``path`` (YAML, or JSON, which is YAML too).
    Raises :class:`CredentialsError`."""
    try:
        document = _parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CredentialsError(f"kubeconfig {path}: {exc}") from exc
    try:
        context = _named(document, "contexts", document["current-context"])["context"]
        cluster = _named(document, "clusters", context["cluster"])["cluster"]
        user = _named(document, "users", context["user"])["user"] or {}
    except (KeyError, TypeError) as exc:
        raise CredentialsError(f"kubeconfig {path}: no usable current context ({exc})") from exc
    for plugin in ("exec", "auth-provider"):
        if plugin in user:
            raise CredentialsError(f"kubeconfig {path}: user {plugin!r} plugins are not "
                                   "supported; use a token or a client certificate")
    url = urlsplit(str(cluster.get("server", "")))
    if url.scheme not in ("https", "http") or not url.hostname:
        raise CredentialsError(f"kubeconfig {path}: server {cluster.get('server')!r} is not "
                               "an http(s) URL")
    tls = _tls(cluster, user, Path(path).parent) if url.scheme == "https" else None
    return Endpoint(host=url.hostname, port=url.port or (443 if tls else 80), context=tls,
                    token=_user_token(user, Path(path).parent),
                    source=f"kubeconfig {path} ({url.scheme}://{url.netloc})")


def _parse(text: str) -> Any:
    """A kubeconfig's document. A JSON one is read without PyYAML: importing it costs the
    daemon 0.9 MiB resident for good (a module cannot be unloaded), and in-cluster
    credentials need no parser at all."""
    if text.lstrip().startswith("{"):
        return json.loads(text)  # a JSONDecodeError is a ValueError
    import yaml  # noqa: PLC0415 - see above

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def _named(document: Any, section: str, name: str) -> Any:
    for item in document[section]:
        if item["name"] == name:
            return item
    raise KeyError(f"{section}: {name!r}")


def _port(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise CredentialsError(f"KUBERNETES_SERVICE_PORT={text!r} is not a port") from exc


def _file_token(path: Path) -> Callable[[], str | None]:
    def token() -> str | None:
        return path.read_text(encoding="utf-8").strip() or None
    return token


def _user_token(user: Mapping[str, Any], base: Path) -> Callable[[], str | None]:
    if "tokenFile" in user:
        return _file_token(base / str(user["tokenFile"]))
    fixed = str(user["token"]) if "token" in user else None
    return lambda: fixed


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path) -> ssl.SSLContext:
    import ssl  # noqa: PLC0415 - TLS is loaded when it is asked for (decision 56)

    try:
        if cluster.get("insecure-skip-tls-verify"):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        elif "certificate-authority-data" in cluster:
            context = ssl.create_default_context(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif "certificate-authority" in cluster:
            context = ssl.create_default_context(
                cafile=str(base / str(cluster["certificate-authority"])))
        else:
            context = ssl.create_default_context()
        with _pem(user, "client-certificate", base) as cert, _pem(user, "client-key",
                                                                   base) as key:
            if cert is not None:
                context.load_cert_chain(cert, key)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise CredentialsError(f"kubeconfig TLS settings: {exc}") from exc
    return context


@contextlib.contextmanager
def _pem(user: Mapping[str, Any], key: str, base: Path) -> Iterator[str | None]:
    """A file holding ``key`` (a path, or ``key-data`` written to a private temporary file
    that is gone once loaded: ``ssl`` loads certificates from files only)."""
    if key in user:
        yield str(base / str(user[key]))
        return
    if f"{key}-data" not in user:
        yield None
        return
    import tempfile  # noqa: PLC0415 - only for inline keys: it imports shutil, bz2, lzma

    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as handle:  # created 0600
        handle.write(base64.b64decode(user[f"{key}-data"]))
        handle.flush()
        yield handle.name
