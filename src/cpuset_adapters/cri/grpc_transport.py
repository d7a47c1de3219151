"""The grpcio transport: unary CRI calls through a grpcio channel on the runtime's unix socket.

The only module of the product that imports grpc. The test lab's ``KubeletClient`` uses it,
so the e2e tests drive containerd with an independent, complete gRPC stack; the daemon uses
``h2_unary`` instead (importing grpc costs about 14 MB of resident memory: decision 35).
"""

from __future__ import annotations

import grpc

from cpuset_adapters.cri.transport import CriError, method_of


def _same(data: bytes) -> bytes:
    # The client serializes and parses the messages; the channel carries bytes.
    return data


class GrpcTransport:
    """A ``UnaryTransport`` over one grpcio channel to ``unix://{path}``, kept for the
    transport's life (grpcio reconnects it as needed)."""

    def __init__(self, path: str) -> None:
        self._channel = grpc.insecure_channel(f"unix://{path}")
        self._methods: dict[str, grpc.UnaryUnaryMultiCallable] = {}

    def unary(self, path: str, request: bytes, timeout: float) -> bytes:
        stub = self._methods.get(path)
        if stub is None:
            stub = self._channel.unary_unary(path, request_serializer=_same,
                                             response_deserializer=_same)
            self._methods[path] = stub
        try:
            response = stub(request, timeout=timeout)
        except grpc.RpcError as err:
            code = err.code()
            raise CriError(method_of(path), int(code.value[0]), err.details() or "") from None
        if not isinstance(response, bytes):
            raise TypeError(f"CRI {method_of(path)} returned {type(response).__name__}")
        return response

    def close(self) -> None:
        self._channel.close()
