"""A tiny OCI image (busybox) built locally, so the lab never pulls from a registry.

``build_image_archive(dest)`` writes an OCI image-layout tar (the format ``ctr images import``
reads): one uncompressed layer holding a static ``/bin/busybox`` plus applet symlinks, an image
config, a manifest, ``index.json`` naming the image through ``io.containerd.image.name`` and
``oci-layout``. Only the standard library is used, and the output is byte-for-byte deterministic
for a given busybox binary (fixed timestamps, owners and entry order), so rebuilding never
changes the image digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: The image's name inside containerd (and the CRI ``sandbox_image`` of the lab).
IMAGE_NAME: Final = "docker.io/library/nri-cpuset-busybox:lab"
#: Where Debian's ``busybox-static`` puts its binary.
BUSYBOX_PATH: Final = Path("/bin/busybox")
#: The applets linked in ``/bin`` (all exist in Debian's busybox-static).
APPLETS: Final = (
    "cat", "echo", "env", "grep", "head", "ls", "nproc", "ps", "sh", "sleep", "tail", "taskset",
    "test", "true", "false", "yes",
)
#: PID 1 of every lab container unless the CRI request gives a command: sleeps for ever but
#: exits at once on SIGTERM (a plain ``sleep`` as PID 1 ignores SIGTERM, so every stop would wait
#: for the runtime's SIGKILL).
DEFAULT_ENTRYPOINT: Final = (
    "/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
)

_EPOCH: Final = 0
_OCI_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
_OCI_INDEX: Final = "application/vnd.oci.image.index.v1+json"
_OCI_CONFIG: Final = "application/vnd.oci.image.config.v1+json"
_OCI_LAYER: Final = "application/vnd.oci.image.layer.v1.tar"
_GOARCH: Final = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
                  "s390x": "s390x", "riscv64": "riscv64"}


@dataclass(frozen=True, slots=True)
class ImageArchive:
    """What ``build_image_archive`` wrote."""

    path: Path
    name: str
    manifest_digest: str
    config_digest: str


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _info(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = link
    info.mtime = _EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _tar(entries: Sequence[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _layer(busybox: bytes, applets: Sequence[str]) -> bytes:
    entries: list[tuple[tarfile.TarInfo, bytes | None]] = [
        (_info(directory, tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755), None)
        for directory in ("bin", "dev", "etc", "proc", "root", "sys", "tmp")
    ]
    entries.append((_info("bin/busybox", tarfile.REGTYPE, 0o755, len(busybox)), busybox))
    entries.extend((_info(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox"), None)
                   for applet in sorted(set(applets)) if applet != "busybox")
    for name, text in (("etc/group", "root:x:0:\n"),
                       ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")):
        data = text.encode()
        entries.append((_info(name, tarfile.REGTYPE, 0o644, len(data)), data))
    return _tar(entries)


def goarch(machine: str | None = None) -> str:
    """The OCI/Go architecture name of this machine (``x86_64`` -> ``amd64``)."""
    machine = machine or platform.machine()
    return _GOARCH.get(machine, machine)


def build_image_archive(
    dest: Path,
    *,
    name: str = IMAGE_NAME,
    busybox: Path = BUSYBOX_PATH,
    applets: Sequence[str] = APPLETS,
    entrypoint: Sequence[str] = DEFAULT_ENTRYPOINT,
    arch: str | None = None,
) -> ImageArchive:
    """Write the OCI image-layout archive to ``dest``; return its path, name and digests.

    Raises ``FileNotFoundError`` when ``busybox`` is missing (install Debian's busybox-static).
    """
    arch = arch or goarch()
    layer = _layer(busybox.read_bytes(), applets)
    layer_digest = _digest(layer)
    config = _json({
        "architecture": arch,
        "os": "linux",
        "config": {
            "Entrypoint": list(entrypoint),
            "Env": ["PATH=/bin"],
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created_by": "cpuset_lab.image", "comment": "busybox-static"}],
    })
    config_digest = _digest(config)
    manifest = _json({
        "schemaVersion": 2,
        "mediaType": _OCI_MANIFEST,
        "config": {"mediaType": _OCI_CONFIG, "digest": config_digest, "size": len(config)},
        "layers": [{"mediaType": _OCI_LAYER, "digest": layer_digest, "size": len(layer)}],
    })
    manifest_digest = _digest(manifest)
    index = _json({
        "schemaVersion": 2,
        "mediaType": _OCI_INDEX,
        "manifests": [{
            "mediaType": _OCI_MANIFEST,
            "digest": manifest_digest,
            "size": len(manifest),
            "platform": {"architecture": arch, "os": "linux"},
            "annotations": {
                "io.containerd.image.name": name,
                "org.opencontainers.image.ref.name": name.rpartition(":")[2],
            },
        }],
    })
    layout = _json({"imageLayoutVersion": "1.0.0"})

    entries: list[tuple[tarfile.TarInfo, bytes | None]] = [
        (_info("blobs", tarfile.DIRTYPE, 0o755), None),
        (_info("blobs/sha256", tarfile.DIRTYPE, 0o755), None),
    ]
    blobs = sorted({_digest(b): b for b in (layer, config, manifest)}.items())
    for digest, blob in blobs:
        entries.append((_info(f"blobs/sha256/{digest.removeprefix('sha256:')}", tarfile.REGTYPE,
                              0o644, len(blob)), blob))
    entries.append((_info("index.json", tarfile.REGTYPE, 0o644, len(index)), index))
    entries.append((_info("oci-layout", tarfile.REGTYPE, 0o644, len(layout)), layout))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(_tar(entries))
    return ImageArchive(path=dest, name=name, manifest_digest=manifest_digest,
                        config_digest=config_digest)
