"""The test lab: a private NRI-enabled containerd, a local busybox image, a kubelet-like CRI
driver, cgroup readers for tests and synthetic machine shapes.

Used by the tests, the benchmarks and the demo (``python -m cpuset_lab demo``); the product
(``cpuset_core``, ``cpuset_adapters``, ``cpuset_cli``) never imports it.
"""
