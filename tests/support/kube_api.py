"""The lab's fake Kubernetes API server (``cpuset_lab.kube_api``) for the unit tests, with the
test certificate in ``tests/support/tls`` for HTTPS."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cpuset_lab.kube_api import COLLECTION, FakeApi, Request, write_kubeconfig
from cpuset_lab.kube_api import serve as serve_lab

TLS = Path(__file__).resolve().parent / "tls"
CERT, KEY = TLS / "cert.pem", TLS / "key.pem"

__all__ = ["CERT", "COLLECTION", "KEY", "FakeApi", "Request", "serve", "write_kubeconfig"]


@contextmanager
def serve(mode: str = "ok", *, tls: bool = False) -> Iterator[FakeApi]:
    """A fake API server until the block ends (HTTPS with the test certificate if ``tls``)."""
    with serve_lab(mode, tls=(CERT, KEY) if tls else None) as api:
        yield api
