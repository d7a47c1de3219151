"""Generated CRI protobuf and gRPC modules (from ``cri.proto``; see tools/genproto.py)."""

from cpuset_adapters.protobuf_deferred import defer_pure_python_messages

# Before the generated modules import protobuf: upb's messages never use the pure-Python ones.
defer_pure_python_messages()
