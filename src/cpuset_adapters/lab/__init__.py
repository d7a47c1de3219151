"""The e2e lab: a private NRI-enabled containerd, a local busybox image, cgroup readers."""
