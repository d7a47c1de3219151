"""What a node pays to take the plugin's image: ``ctr images import`` of the OCI archive that
``scripts/build-image`` leaves, into a fresh private containerd of the lab each time (nothing of
the image already there), as the e2e-pod tests import it (needs root and
``scripts/install-containerd``).

Prints the archive's size, each import's wall time and their median, per runtime, and the
unpacked size containerd reports for the image (``ctr images ls``).

Run: ``python bench/image_import.py [--archive PATH] [--runtimes 1.7,2.x] [--repeats 3]``
(the default archive is the one ``scripts/build-image --print`` names).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.daemonset.image_archive import archive_image_name, archive_path

ROOT = Path(__file__).resolve().parents[1]


def import_once(archive: Path, runtime: str) -> tuple[float, str]:
    """One import into a new containerd of ``runtime``: its seconds and the image's line in
    ``ctr images ls`` (name, type, digest, size, platforms)."""
    with tempfile.TemporaryDirectory(prefix="image-import-") as tmp:
        lab = LabContainerd(Path(tmp) / "lab", installation=find_installation(runtime=runtime))
        try:
            lab.start()
            started = time.monotonic()
            lab.ctr("images", "import", "--all-platforms", str(archive), timeout=600.0)
            seconds = time.monotonic() - started
            name = archive_image_name(archive)
            listed = [line for line in lab.ctr("images", "ls").splitlines() if name in line]
        finally:
            lab.close()
    return seconds, " ".join(listed[0].split()) if listed else "(not listed)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, default=None)
    parser.add_argument("--runtimes", default="1.7,2.x")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (it runs containerd)", file=sys.stderr)
        return 2
    archive = args.archive or archive_path(ROOT)
    print(f"{archive}: {archive.stat().st_size:,} bytes "
          f"({archive.stat().st_size / 2**20:.1f} MiB), image {archive_image_name(archive)}")
    for runtime in args.runtimes.split(","):
        times = []
        listed = ""
        for _ in range(args.repeats):
            seconds, listed = import_once(archive, runtime)
            times.append(seconds)
        print(f"containerd {runtime}: import {', '.join(f'{t:.2f}' for t in times)} s, "
              f"median {statistics.median(times):.2f} s; ctr images ls: {listed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
