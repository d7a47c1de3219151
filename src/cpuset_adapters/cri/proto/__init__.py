"""Generated CRI protobuf and gRPC modules (from ``cri.proto``; see tools/genproto.py)."""
