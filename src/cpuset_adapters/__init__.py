"""Adapters that connect the core's ports to the machine, containerd and files."""
