"""CRI (Kubernetes Container Runtime Interface) client: drives containerd like a kubelet."""
