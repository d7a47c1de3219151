"""What systemd says about a container in a guest whose PID 1 is systemd: its scope unit, the
unit's ``AllowedCPUs``, and where the kernel put the process (``/proc/<pid>/cgroup``), read
without the product's path expansion so a misreading there cannot agree with itself."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab.kubelet import KubeletClient
from tests.vm import kernel

CGROUP = Path("/sys/fs/cgroup")


def systemctl(*args: str) -> str:
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, f"systemctl {' '.join(args)}: {done.stderr or done.stdout}"
    return done.stdout


def scope(container_id: str) -> str:
    """The unit runc's systemd driver starts for a CRI container of containerd."""
    return f"cri-containerd-{container_id}.scope"


def expected_cgroup(tier: str, pod_uid: str, container_id: str) -> str:
    """Where the kubelet's systemd driver and runc put a container: ``tier`` is ``""``
    (Guaranteed), ``burstable`` or ``besteffort``; ``-`` in the uid becomes ``_``."""
    uid = pod_uid.replace("-", "_")
    pod = f"kubepods-{tier}-pod{uid}.slice" if tier else f"kubepods-pod{uid}.slice"
    tier_slice = f"/kubepods-{tier}.slice" if tier else ""
    return f"/kubepods.slice{tier_slice}/{pod}/{scope(container_id)}"


def process_cgroup(pid: int) -> str:
    """The unified-hierarchy cgroup of ``pid`` (``0::/path``)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError(f"pid {pid} is in no cgroup v2 cgroup")


def allowed_cpus_of(units: list[str]) -> dict[str, CPUSet]:
    """Every unit's ``AllowedCPUs`` from one ``systemctl show`` (one process: under emulation
    a ``systemctl`` start costs a good part of a second)."""
    text = systemctl("show", "--property=Id,AllowedCPUs", *units)
    allowed: dict[str, CPUSet] = {}
    for block in text.strip().split("\n\n"):
        fields = dict(line.partition("=")[::2] for line in block.splitlines())
        allowed[fields["Id"]] = CPUSet.parse(fields.get("AllowedCPUs", "").replace(" ", ","),
                                             allow_empty=True)
    return allowed


def allowed_not_enforced(cri: KubeletClient,
                         containers: Sequence[tuple[str, str]]) -> list[str]:
    """Of ``containers`` (name, id), those whose scope's ``AllowedCPUs`` (what systemd
    re-applies) is not the cpuset the kernel enforces, each described."""
    if not containers:
        return []  # `systemctl show` without a unit shows the manager's own properties
    allowed = allowed_cpus_of([scope(cid) for _, cid in containers])
    wrong = []
    for name, cid in containers:
        enforced = kernel.placement(cri, cid).cpus
        if allowed[scope(cid)] != enforced:
            wrong.append(f"{name}: AllowedCPUs {allowed[scope(cid)]}, enforced {enforced}\n"
                         + describe(cri, cid))
    return wrong


def describe(cri: KubeletClient, container_id: str) -> str:
    """Everything worth seeing when a container is not where it should be: its cgroup's
    cpuset files (or their absence: the controller not enabled there), the parents'
    ``cgroup.subtree_control`` and what systemd holds for its scope."""
    status = cri.container_status(container_id)
    lines = [f"{container_id[:12]}: pid {status.pid}, cgroupsPath {status.cgroups_path!r}"]
    if status.pid is None:
        return "\n".join(lines)
    directory = CGROUP / process_cgroup(status.pid).lstrip("/")
    while directory != CGROUP.parent:
        files = {name: _read(directory / name) for name in (
            "cpuset.cpus", "cpuset.cpus.effective", "cgroup.subtree_control")}
        lines.append(f"  {directory}: " + ", ".join(f"{k}={v}" for k, v in files.items()))
        directory = directory.parent
    unit = scope(container_id)
    lines.append(f"  {unit}: " + systemctl("show", "--property=AllowedCPUs,EffectiveCPUs,"
                                                    "ActiveState", unit).replace("\n", " "))
    return "\n".join(lines)


def _read(path: Path) -> str:
    try:
        return repr(path.read_text().strip())
    except OSError as exc:
        return f"<{exc.strerror}>"
