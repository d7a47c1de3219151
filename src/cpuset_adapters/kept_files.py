"""Containers' ``cpuset.cpus`` files kept open between the kernel fast path's writes.

An integer creation beside 500 shared containers writes 500 of these files before its answer
(issue 45), and opening and closing one is a third of a write's cost on cgroup v1 (this host,
500 cgroups with a task each: 17.5 µs open, write and close; 11.6 µs a write on a descriptor
kept open). So after a container's first write its descriptor stays open, and is closed:

- when the container stops or is forgotten (removed, alone or with its pod): an open
  descriptor pins a removed cgroup as a dying one, and a cgroup goes with its task;
- when the plugin resyncs (the runtime connection ended: everything is decided again);
- when a write on it says the file is gone (``ENODEV``, a removed cgroup; ``EBADF``): that write
  is then made as if nothing were kept (open, write, close), so a gone cgroup is refused as
  before.

At most :attr:`KeptFiles.limit` are kept (half the process's ``RLIMIT_NOFILE`` soft limit, the
rest for sockets and logs); beyond it a file is opened per write, as before. Only a file that
reports a size of 0 is kept: a cgroup file takes each write whole, while a plain file (a copy of
a tree, a test's) would keep the tail of a longer earlier value.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from collections.abc import Callable

GONE = frozenset({errno.ENODEV, errno.EBADF})
"""A write on a kept descriptor failing with these: its cgroup is gone (or the descriptor)."""


def default_limit() -> int:
    """Half the soft ``RLIMIT_NOFILE`` (an unlimited one counts as 65536)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (65536 if soft == resource.RLIM_INFINITY else soft) // 2


class KeptFiles:
    """Container id → its ``cpuset.cpus`` open for writing."""

    def __init__(self, limit: int | None = None, *,
                 keeps: Callable[[int], bool] = lambda fd: os.fstat(fd).st_size == 0) -> None:
        self.limit = default_limit() if limit is None else limit
        self._keeps = keeps
        """Whether a freshly written descriptor's file may be kept (a cgroup file's size: 0)."""
        self._open: dict[str, tuple[str, int]] = {}
        """Container id → (the file's path, its descriptor)."""

    def __len__(self) -> int:
        return len(self._open)

    def write(self, container_id: str, file: str, value: bytes) -> None:
        """Write ``value`` into ``file``, the container's; raise ``OSError`` as a write of a
        freshly opened file would (a gone cgroup: ``ENOENT``)."""
        kept = self._open.get(container_id)
        if kept is not None:
            if kept[0] == file:
                try:
                    os.pwrite(kept[1], value, 0)
                    return
                except OSError as exc:
                    if exc.errno not in GONE:
                        raise  # the kernel refused the value: the file is still the cgroup's
            self.forget(container_id)  # gone, or the container's cgroup is another now
        # No O_CREAT: a cgroup that is gone must fail, not leave a stray file behind.
        fd = os.open(file, os.O_WRONLY | os.O_TRUNC)  # as a shell's `echo >` does
        try:
            os.write(fd, value)
            keep = len(self._open) < self.limit and self._keeps(fd)
        except BaseException:
            os.close(fd)
            raise
        if keep:
            self._open[container_id] = (file, fd)
        else:
            os.close(fd)

    def keep(self, container_id: str, file: str) -> None:
        """Open the container's ``file`` and keep it, unwritten, for its next write (so the
        first write after a start or a resync costs a write, not an open too): nothing when it
        is kept already, the limit is reached, or it cannot be opened (the write will say why)."""
        kept = self._open.get(container_id)
        if (kept is not None and kept[0] == file) or len(self._open) >= self.limit:
            return
        try:
            fd = os.open(file, os.O_WRONLY)  # no O_CREAT: a gone cgroup leaves nothing behind
        except OSError:
            return
        try:
            keep = self._keeps(fd)
        except OSError:
            keep = False
        if not keep:
            os.close(fd)
            return
        self.forget(container_id)  # its cgroup is another now
        self._open[container_id] = (file, fd)

    def forget(self, container_id: str) -> None:
        """Close the container's file if it is kept (it is gone)."""
        kept = self._open.pop(container_id, None)
        if kept is not None:
            _close(kept[1])

    def close_all(self) -> None:
        """Close every kept file (a resync, or the plugin stopping)."""
        for _file, fd in self._open.values():
            _close(fd)
        self._open.clear()


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):  # already closed (EBADF): nothing is kept either way
        os.close(fd)
