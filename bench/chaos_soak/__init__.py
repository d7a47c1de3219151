"""The chaos soak's parts (``bench/soak.py`` is the entry point): a seeded random walk of pod
operations and faults against the lab's real containerd and ``nri-cpuset run``, checked against
the kernel's cgroup files and ``/proc/PID/status``.

- ``model``: who should own what (an independent model of the plugin's rules), and which
  outcome of each creation or resize is allowed;
- ``walk``: the seeded choice of the next operations, weighted like a busy node;
- ``history``: the operations as JSON lines, written as they run and read back for ``--replay``;
- ``kernel``: what the kernel enforces for each container;
- ``invariants``: the checks on a kernel view, pure;
- ``node`` / ``operations`` / ``faults``: the lab, and carrying out each operation and fault;
- ``runner`` / ``report``: the loop, settling, the closing line and a violation's report.
"""
