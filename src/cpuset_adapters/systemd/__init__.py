"""systemd as the cgroup driver's owner: a scope's unit properties set over D-Bus (``bus``,
the one bulk call's marshalling in ``call``) before its cgroup files (``scope_writer``)."""
