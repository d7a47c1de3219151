"""``nri-cpuset run``: the daemon (the placement service behind an NRI session, its background
updates, the CRI inventory, the hotplug watcher, metrics, probes and the status socket), how it
starts (configuration, startup checks, logging) and the launcher containerd starts it with."""
