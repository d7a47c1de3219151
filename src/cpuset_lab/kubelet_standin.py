"""A stand-in for the kubelet at a node's boot: ``python -m cpuset_lab.kubelet_standin``, run as
``kubelet.service`` in a systemd guest (``cold_boot``).

It does what a kubelet does first after a boot, and nothing else: wait until containerd's CRI
answers (polling every 50 ms: the kubelet retries its runtime connection the same way), then
run the pods of its manifest, one after the other, as fast as CRI lets it. After a reboot, a
pod whose sandbox is not ready is run again with the next attempt number and the same uid, the
dead sandbox removed first, as the kubelet does. Each container's first command writes its own
``Cpus_allowed_list`` and ``Mems_allowed_list`` to its CRI log: where the kernel let it run at
its first instruction, whoever placed it and whenever.

It writes ``boot-<n>.json`` (the next free ``n``) in ``--record``: the monotonic times
(``CLOCK_MONOTONIC``, what systemd's ``*TimestampMonotonic`` use) of its start, of CRI's first
answer and of each container's creation and start, with the ids and log paths. Exits 1 with
the error when CRI refuses anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Final

from cpuset_adapters.cri.client import CriError
from cpuset_core import DEFAULT_PIN_ANNOTATION, QoS
from cpuset_lab.cri_log import cri_log_lines
from cpuset_lab.image import DEFAULT_ENTRYPOINT
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

FIRST_WORDS: Final = "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; "
"""Prefixed to the image's entrypoint: the container's first instruction reads where it runs."""


def command() -> list[str]:
    """The container's command: ``FIRST_WORDS``, then the lab image's sleeping entrypoint."""
    shell, flag, loop = DEFAULT_ENTRYPOINT
    return [shell, flag, FIRST_WORDS + loop]


def wait_for_cri(cri: KubeletClient, timeout: float) -> float:
    """Poll CRI ``Version`` until it answers; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cri.version(timeout=1.0)
        except CriError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
        else:
            return time.monotonic()


def run_pod(cri: KubeletClient, pod: dict[str, Any], *, driver: str,
            logs: Path) -> dict[str, Any]:
    """Run ``pod`` (a manifest entry) unless its sandbox is ready; what was done, with times."""
    uid, name = pod["uid"], pod["name"]
    mine = [p for p in cri.list_pods() if p.uid == uid]
    if any(p.ready for p in mine):
        return {"name": name, "kept": True}
    for stale in mine:  # the previous boot's: its processes are gone
        cri.stop_pod(stale.id)
        cri.remove_pod(stale.id)
    qos = QoS(pod["qos"])
    log_dir = logs / f"{name}-{len(mine)}"
    log_dir.mkdir(parents=True, exist_ok=True)
    spec = PodSpec(name=name, uid=uid, attempt=len(mine), log_directory=str(log_dir),
                   cgroup_parent=cgroup_parent(qos, uid, driver=driver),
                   annotations={DEFAULT_PIN_ANNOTATION: pod["pins"]} if pod.get("pins") else {})
    pod_id = cri.run_pod(spec)
    resources = (guaranteed(pod["cpus"], "64Mi") if qos is QoS.GUARANTEED
                 else container_resources(cpu_request="100m"))
    created = time.monotonic()
    container_id = cri.create_container(pod_id, None, "app", pod["image"], resources=resources,
                                        command=command())
    cri.start(container_id)
    return {"name": name, "kept": False, "pod_id": pod_id, "container_id": container_id,
            "created": created, "started": time.monotonic(),
            "log": str(log_dir / "app" / "0.log")}


def first_words(log: Path) -> dict[str, str]:
    """What a container's first instruction wrote (``Cpus_allowed_list`` → ``0-3``), read
    from its CRI log."""
    found = {}
    for line in cri_log_lines(log):
        key, _, value = line.partition(":")
        if key in ("Cpus_allowed_list", "Mems_allowed_list"):
            found[key] = value.strip()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cri", required=True, help="containerd's CRI socket")
    parser.add_argument("--manifest", type=Path, required=True,
                        help="JSON list of pods: name, uid, qos, image, cpus or pins")
    parser.add_argument("--record", type=Path, required=True, help="where boot-<n>.json goes")
    parser.add_argument("--driver", default="systemd", choices=("systemd", "cgroupfs"))
    parser.add_argument("--cri-timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    began = time.monotonic()
    record: dict[str, Any] = {"began": began, "pods": []}
    args.record.mkdir(parents=True, exist_ok=True)
    boot = 1 + sum(1 for _ in args.record.glob("boot-*.json"))
    out = args.record / f"boot-{boot}.json"
    cri = KubeletClient(args.cri, timeout=300.0)
    try:
        record["cri_answered"] = wait_for_cri(cri, args.cri_timeout)
        for pod in json.loads(args.manifest.read_text()):
            record["pods"].append(run_pod(cri, pod, driver=args.driver,
                                          logs=args.record / "pods"))
    except CriError as exc:
        record["error"] = str(exc)
        print(f"kubelet stand-in: {exc}", file=sys.stderr)
        return 1
    finally:
        record["ended"] = time.monotonic()
        out.write_text(json.dumps(record, indent=2) + "\n")
        cri.close()
    print(f"kubelet stand-in: boot {boot}: {len(record['pods'])} pods in "
          f"{record['ended'] - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
