"""What a VM lab guest whose PID 1 is systemd (virtme-ng's ``--systemd``) needs beyond the
others: kernel arguments and virtme-ng's configuration, both about getting this machine's own
systemd to boot a guest quickly and to run the guest script.

- This machine's root has ``/.dockerenv``, so a guest systemd takes itself for a Docker
  container: it then ignores every ``systemd.*`` kernel argument (a container's come from PID
  1's own arguments) and starts console-getty instead of the serial getty virtme-ng runs the
  guest script from. An empty ``container`` in PID 1's environment (the kernel passes
  ``container=`` to init) tells PID 1 it is not in one; its generators still believe it, so
  the boot target is the serial getty itself: sysinit, basic (D-Bus socket activation among
  the sockets) and the getty start, ``multi-user.target`` does not.
- systemd-tmpfiles empties ``/tmp`` at boot: through 9p under emulation, the host's ``/tmp``
  (150 000 entries when other runs fill it) took more than 5 minutes. virtme-ng binds its
  ``systemd.fstab`` setting over ``/etc/fstab``; one that mounts a tmpfs on ``/tmp`` leaves
  tmpfiles nothing to walk. virtme-ng reads that setting from ``$HOME/.config/virtme-ng``,
  so each systemd guest gets a ``HOME`` of its own in its results directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

SYSTEMD_ARGS: Final = ("container=", "systemd.unit=serial-getty@ttyS0.service")
FSTAB: Final = "tmpfs /tmp tmpfs mode=1777,nosuid,nodev 0 0\n"


def prepare_home(results: Path) -> Path:
    """A ``HOME`` for virtme-ng under ``results`` whose configuration points ``systemd.fstab``
    at an fstab mounting a tmpfs on ``/tmp``; returns it. (``masks`` keeps virtme-ng's
    default; the guest sees the file through its read-only view of this machine.)"""
    home = results / "vng-home"
    config = home / ".config" / "virtme-ng"
    config.mkdir(parents=True, exist_ok=True)
    fstab = results / "fstab"
    fstab.write_text(FSTAB)
    (config / "virtme-ng.conf").write_text(json.dumps(
        {"default_opts": {}, "clean_exclude": [],
         "systemd": {"masks": ["getty@"], "fstab": str(fstab)}}, indent=2) + "\n")
    return home
