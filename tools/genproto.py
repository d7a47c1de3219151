"""Regenerate the protobuf modules from every ``.proto`` under ``src/*/**/proto/``.

``python tools/genproto.py`` writes ``*_pb2.py`` and ``*_pb2.pyi`` (and ``*_pb2_grpc.py`` for
files that declare gRPC services and sit in a ``grpc`` marked directory) next to each ``.proto``.
``python tools/genproto.py --check`` regenerates into a temporary tree and exits 1 when any
committed file differs (the staleness test and CI use it). Needs grpcio-tools (``.[proto]``).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
# Directories whose services are real gRPC (CRI); NRI speaks ttrpc, so no gRPC stubs there.
GRPC_DIRS = {Path("cpuset_adapters/cri/proto")}


def protos() -> list[Path]:
    return sorted(p.relative_to(SRC) for p in SRC.glob("**/proto/*.proto"))


def generate(out: Path) -> list[Path]:
    """Compile every proto into ``out`` (a tree mirroring ``src``); return the files written."""
    from grpc_tools import protoc  # noqa: PLC0415 - only needed when regenerating

    include = Path(protoc.__file__).parent / "_proto"
    for proto in protos():
        args = ["protoc", f"-I{SRC}", f"-I{include}", f"--python_out={out}", f"--pyi_out={out}"]
        if proto.parent in GRPC_DIRS:
            args.append(f"--grpc_python_out={out}")
        if protoc.main([*args, str(SRC / proto)]) != 0:
            raise SystemExit(f"protoc failed on {proto}")
    return sorted(p.relative_to(out) for p in out.glob("**/*_pb2*.py*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if committed output is stale")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        written = generate(out)
        if args.check:
            stale = [p for p in written
                     if not (SRC / p).exists() or not filecmp.cmp(out / p, SRC / p, shallow=False)]
            for path in stale:
                print(f"stale or missing: src/{path}", file=sys.stderr)
            return 1 if stale else 0
        for path in written:
            (SRC / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / path, SRC / path)
            print(f"wrote src/{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
