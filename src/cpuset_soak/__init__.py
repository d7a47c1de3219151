"""The chaos soak, a test harness of its own (``python -m cpuset_soak``; ``main`` is the entry
point): a seeded random walk of pod operations and faults against the lab's real containerd and
``nri-cpuset run``, checked against the kernel's cgroup files and ``/proc/PID/status``.

The room above the lab: it may import the lab, the adapters and the core; nothing imports it,
and neither distribution ships it. ``plants/`` holds the planted defects (patches of product
files, ``git apply``-ed from the repository's root) and recorded histories to ``--replay``.

- ``model``: who should own what (an independent model of the plugin's rules), and which
  outcome of each creation or resize is allowed; ``reclass``, ``resync``: a class changed at
  an update, what a Synchronize decides again; ``lifetimes``: a container created and not
  started, judged against the plugin's start grace;
- ``walk``: the seeded choice of the next operations, weighted like a busy node; ``retries``:
  failing pods' next attempts and created containers' fates, counted in steps;
- ``history``: the operations as JSON lines, written as they run and read back for ``--replay``;
- ``parts``: what operations touch, by role (small Protocols, the model under its lock, the
  pace of waits); ``dispatch``: each operation kind, handed the parts it uses;
- ``pods``, ``updates``, ``outcomes``: the pod operations, changes to running containers, and
  judging what the runtime answered; ``failing``, ``unstarted``: pods whose start fails (their
  attempts beside the last dead instance), containers created and never started; ``faults``,
  ``burst``, ``hotplug``: the faults;
- ``kernel``: what the kernel enforces for each container; ``invariants``: the checks on a
  kernel view, pure;
- ``node``, ``plugin``, ``kubelet``: the lab's containerd, the plugin and the soak's kubelet
  (the parts' implementations);
- ``runner``, ``record``, ``report``: the loop and settling, what the run did and found, the
  closing line and a violation's report; ``args``, ``main``: the command line.
"""
