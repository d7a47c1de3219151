"""What a VM lab guest whose PID 1 is systemd (virtme-ng's ``--systemd``) needs beyond the
others: kernel arguments and virtme-ng's configuration, both about getting this machine's own
systemd to boot a guest quickly and to run the guest script.

- This machine's root has ``/.dockerenv``, so a guest systemd takes itself for a Docker
  container: it then ignores every ``systemd.*`` kernel argument (a container's come from PID
  1's own arguments) and starts console-getty instead of the serial getty virtme-ng runs the
  guest script from. An empty ``container`` in PID 1's environment (the kernel passes
  ``container=`` to init) tells PID 1 it is not in one; its generators still believe it, so
  the boot target is the serial getty itself: sysinit and the getty start; basic.target (and
  so sockets.target, the system bus's ``dbus.socket`` among them) and ``multi-user.target`` do
  not: ``scripts/vm-guest`` starts ``dbus.socket``, which a node has.
- systemd-tmpfiles empties ``/tmp`` at boot (Debian's ``tmp.conf``: ``D /tmp``): through 9p
  under emulation, the host's ``/tmp`` (150 000 entries when other runs fill it) took more
  than 5 minutes. virtme-ng binds its ``systemd.fstab`` setting over ``/etc/fstab``; that
  fstab binds a ``tmp.conf`` that only creates ``/tmp`` over Debian's, so tmpfiles has nothing
  to walk. ``/tmp`` itself stays what virtme-ng makes of it in every shape, an overlay on this
  machine's, where a checkout under ``/tmp`` (a CI clone) is seen. (A tmpfs on ``/tmp``, tried
  first, hid such a checkout: virtme-ng's overlay then has the tmpfs below it.) virtme-ng
  reads that setting from ``$HOME/.config/virtme-ng``, so each systemd guest gets a ``HOME``
  of its own in its results directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

SYSTEMD_ARGS: Final = ("container=", "systemd.unit=serial-getty@ttyS0.service")
TMPFILES_TMP: Final = Path("/usr/lib/tmpfiles.d/tmp.conf")
"""Debian's rule for ``/tmp`` (``D``: emptied at boot), which the guest's fstab covers."""
TMP_CREATED_ONLY: Final = ("# nri-cpuset VM lab: /tmp is created, never emptied at boot "
                           "(the guest's /tmp is this machine's, through 9p)\n"
                           "d /tmp 1777 root root -\n")


def fstab(tmp_rule: Path) -> str:
    """The guest's ``/etc/fstab``: ``tmp_rule`` bound over Debian's tmpfiles rule for ``/tmp``
    (``nofail``: a guest whose root lacks that rule boots as well)."""
    return f"{_fstab_escape(str(tmp_rule))} {TMPFILES_TMP} none bind,ro,nofail 0 0\n"


def _fstab_escape(field: str) -> str:
    # fstab(5) separates fields by whitespace; octal escapes are how a path carries one.
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in field)


def prepare_home(results: Path) -> Path:
    """A ``HOME`` for virtme-ng under ``results`` whose configuration points ``systemd.fstab``
    at :func:`fstab`'s file; returns it. (``masks`` keeps virtme-ng's default; the guest sees
    these files through its read-only view of this machine.)"""
    home = results / "vng-home"
    config = home / ".config" / "virtme-ng"
    config.mkdir(parents=True, exist_ok=True)
    tmp_rule = results / "tmpfiles-tmp.conf"
    tmp_rule.write_text(TMP_CREATED_ONLY)
    fstab_file = results / "fstab"
    fstab_file.write_text(fstab(tmp_rule))
    (config / "virtme-ng.conf").write_text(json.dumps(
        {"default_opts": {}, "clean_exclude": [],
         "systemd": {"masks": ["getty@"], "fstab": str(fstab_file)}}, indent=2) + "\n")
    return home
