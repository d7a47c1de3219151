"""A runtime handler whose live updates the lab can make fail: real failures, for the tests of
what the plugin does when the runtime refuses a cpuset change.

The lab containerd has a second CRI runtime handler, :data:`HANDLER` (``runc-faulty``), whose
``BinaryName`` is a small shell wrapper (:func:`wrapper_script`) around the real runc. It
``exec``\\ s runc unchanged, except for ``runc [global flags] update ... <id>`` (how
containerd's runc shim applies a running container's new resources, through go-runc's
``update --resources - <id>``): when a flag file named after the container id exists in the
lab's fault directory, it prints an error and exits 1 instead, so the shim, containerd and
whoever asked for the update see a failed update and the cgroup stays as it was. Only pods run
with ``runtime_handler=HANDLER`` go through it; the others never pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

HANDLER: Final = "runc-faulty"
"""The CRI runtime handler whose updates can be made to fail."""

REFUSAL: Final = "lab: runc update refused for"
"""How the wrapper's error begins (containerd logs it with the update's failure)."""

#: runc's global flags that take a value as the next argument (go-runc passes these).
_VALUE_FLAGS: Final = ("--root", "--log", "--log-format", "--criu", "--rootless")


def wrapper_script(runc: Path, faults: Path) -> str:
    """The wrapper: ``runc`` unchanged, but ``update`` of a container flagged in ``faults``
    (a file named by its id) fails with exit code 1."""
    value_flags = "|".join(_VALUE_FLAGS)
    return f"""#!/bin/sh
# Written by the nri-cpuset lab (cpuset_lab.faulty_runc): runc, except that `update` of a
# container whose id is a file in {faults} fails.
command=""
skip=0
id=""
for arg in "$@"; do
    id=$arg
    if [ -n "$command" ]; then continue; fi
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$arg" in
        {value_flags}) skip=1 ;;
        -*) ;;
        *) command=$arg ;;
    esac
done
if [ "$command" = update ] && [ -n "$id" ] && [ -e "{faults}/$id" ]; then
    cat >/dev/null 2>&1
    echo "{REFUSAL} $id (fault injected)" >&2
    exit 1
fi
exec {runc} "$@"
"""


class UpdateFaults:
    """Which containers' runc updates fail: one flag file per container id in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def fail(self, container_id: str) -> None:
        """From now on every runc update of ``container_id`` fails (its pod must run with
        :data:`HANDLER`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._flag(container_id).touch()

    def allow(self, container_id: str) -> None:
        """Updates of ``container_id`` go through again."""
        self._flag(container_id).unlink(missing_ok=True)

    def failing(self) -> set[str]:
        """The container ids whose updates fail now."""
        if not self.directory.is_dir():
            return set()
        return {p.name for p in self.directory.iterdir()}

    def clear(self) -> None:
        """Every update goes through again."""
        for container_id in self.failing():
            self.allow(container_id)

    def _flag(self, container_id: str) -> Path:
        if not container_id or "/" in container_id or container_id.startswith("."):
            raise ValueError(f"not a container id: {container_id!r}")
        return self.directory / container_id
