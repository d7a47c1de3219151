"""What the topology publisher costs the daemon in memory (the plugin's budget: 40 MiB at rest).

1. **Clients.** For each Kubernetes client that is installed (the project's own standard-library
   client, and PyPI's ``lightkube``, ``kubernetes``, ``kr8s``), a fresh interpreter imports the
   daemon's modules, then the client, then writes one NodeResourceTopology over HTTPS to the
   lab's fake API server (``cpuset_lab.kube_api``): VmRSS after each step, after
   ``malloc_trim`` as the daemon does at rest. ``kr8s`` is imported only: its first request
   reads API discovery endpoints the fake does not serve.
2. **The daemon.** ``nri-cpuset run`` against the NRI runtime double (``tests/support``) that
   synchronizes it with ``--pods`` running pods, with the publisher off and then on (writing to
   the fake API server over HTTPS, or HTTP with ``--api http``; its kubeconfig YAML, or JSON
   with ``--kubeconfig json``): VmRSS and VmHWM after 12 s at rest, the CPU time those 12 s
   took, and the writes made; with ``--events``, the daemon with the publisher on writes
   Kubernetes Events as well (``[events]``).

Run from the repository root: ``python bench/publisher_rss.py [--pods 100]``. Prints figures
only; nothing is asserted. Needs no root, no containerd.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the runtime double, the test certificate and the NRI builders

from tests.builders.nri import container, pod  # noqa: E402
from tests.support.kube_api import CERT, KEY  # noqa: E402
from tests.support.nri_runtime import RuntimeDouble  # noqa: E402

from cpuset_lab.kube_api import FakeApi, serve  # noqa: E402
from cpuset_lab.machines import DUAL_SOCKET_HT, write_sysfs_tree  # noqa: E402
from cpuset_lab.plugin_process import PluginProcess  # noqa: E402

REST = 12.0
"""Seconds at rest before reading memory: the daemon trims freed memory every 10 s."""

CLIENTS = ("stdlib", "lightkube", "kubernetes", "kr8s")

_CHILD = textwrap.dedent('''
    import sys
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    import cpuset_cli.bootstrap, cpuset_cli.daemon.plugin
    from cpuset_adapters.process_memory import limit_heaps, release_free_memory
    limit_heaps()
    release_free_memory()
    client, kubeconfig = sys.argv[1], sys.argv[2]
    base = rss()
    OBJ = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": client}, "zones": [{"name": "node-0", "type": "Node",
           "resources": [{"name": "cpu", "capacity": 8, "allocatable": 8, "available": 8}]}]}
    if client == "stdlib":
        from cpuset_adapters.kubernetes.api_client import TopologyApi
        from cpuset_adapters.kubernetes.credentials import from_kubeconfig
        imported = rss()
        TopologyApi(from_kubeconfig(kubeconfig)).apply(OBJ)
    elif client == "lightkube":
        from lightkube import Client, KubeConfig
        from lightkube.generic_resource import create_global_resource
        imported = rss()
        NRT = create_global_resource("topology.node.k8s.io", "v1alpha2",
                                     "NodeResourceTopology", "noderesourcetopologies")
        Client(KubeConfig.from_file(kubeconfig)).create(NRT(OBJ))
    elif client == "kubernetes":
        from kubernetes import client as api, config
        imported = rss()
        config.load_kube_config(kubeconfig)
        api.CustomObjectsApi().create_cluster_custom_object(
            "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", OBJ)
    else:
        import kr8s
        imported = rss()
    release_free_memory()
    print(f"{base:.1f} {imported - base:.1f} {rss() - base:.1f}")
''')


def installed(client: str) -> bool:
    if client == "stdlib":
        return True
    probe = subprocess.run([sys.executable, "-c", f"import {client}"],  # noqa: S603 - ours
                           capture_output=True, check=False)
    return probe.returncode == 0


def kubeconfig(path: Path, api: FakeApi, *, tls: bool = True, form: str = "yaml") -> Path:
    """A kubeconfig for ``api``: YAML (the lab's) or JSON (read without PyYAML, as the
    DaemonSet's in-cluster credentials need no parser), over HTTPS with the test CA or HTTP."""
    if form == "json" or not tls:
        scheme = "https" if tls else "http"
        cluster: dict[str, str] = {"server": f"{scheme}://127.0.0.1:{api.port}"}
        if tls:
            cluster["certificate-authority"] = str(CERT)
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "lab",
            "clusters": [{"name": "lab", "cluster": cluster}],
            "users": [{"name": "lab", "user": {"token": "lab"}}],
            "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
        return path
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        f"clusters: [{{name: lab, cluster: {{server: 'https://127.0.0.1:{api.port}', "
        f"certificate-authority: '{CERT}'}}}}]\n"
        "users: [{name: lab, user: {token: lab}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: lab}}]\n")
    return path


def clients(workdir: Path) -> None:
    print("client       daemon modules   + import   + import and one request (after trim)")
    with serve(tls=(CERT, KEY)) as api:
        config = kubeconfig(workdir / "kubeconfig", api)
        for client in CLIENTS:
            if not installed(client):
                print(f"{client:<12} not installed")
                continue
            out = subprocess.run(  # noqa: S603 - our interpreter, our script
                [sys.executable, "-c", _CHILD, client, str(config)], capture_output=True,
                text=True, check=False)
            if out.returncode != 0:
                print(f"{client:<12} failed: {out.stderr.strip().splitlines()[-1]}")
                continue
            base, imported, total = (float(x) for x in out.stdout.split())
            request = "(import only)" if client == "kr8s" else f"{total:+.1f} MiB"
            print(f"{client:<12} {base:8.1f} MiB   {imported:+6.1f} MiB   {request}")


async def daemon(workdir: Path, pods: int, publisher: bool, *, events: bool = False,
                 tls: bool = True, form: str = "yaml") -> None:
    sysfs = workdir / "sys"
    if not sysfs.exists():
        write_sysfs_tree(DUAL_SOCKET_HT, sysfs)
    running = [pod(f"web{n}", qos="burstable") for n in range(pods)]
    with serve(tls=(CERT, KEY) if tls else None) as api:
        config = workdir / f"config-{publisher}.toml"
        cgroups = workdir / "cgroup"
        cgroups.mkdir(exist_ok=True)
        text = f'[runtime]\ncgroup_root = "{cgroups}"\nverify_period = 0\n'
        if publisher:
            path = kubeconfig(workdir / "kubeconfig", api, tls=tls, form=form)
            text += ('[topology_publisher]\nenabled = true\nnode_name = "rss"\n'
                     f'kubeconfig = "{path}"\n')
            if events:  # [events] too, through the publisher's credentials
                text += '[events]\nenabled = true\n'
        config.write_text(text)
        socket = workdir / f"nri-{publisher}.sock"
        async with RuntimeDouble(socket, pods=running,
                                 containers=[container(p.name, p, cpuset="0-15")
                                             for p in running]) as runtime:
            plugin = PluginProcess(socket, workdir / f"plugin-{publisher}.log",
                                   args=("--config", str(config), "--sysfs-root", str(sysfs)))
            plugin.start()
            try:
                await runtime.wait_ready(timeout=60)
                ready_cpu = plugin.cpu_seconds()
                await asyncio.sleep(REST)
                memory, idle_cpu = plugin.memory_kib(), plugin.cpu_seconds() - ready_cpu
            finally:
                plugin.stop()
        writes = f"; API requests: {', '.join(api.methods()) or 'none'}" if publisher else ""
        on = "on + events" if publisher and events else "on " if publisher else "off"
        print(f"publisher {on}  VmRSS {memory['VmRSS'] / 1024:.1f} MiB"
              f"  VmHWM {memory['VmHWM'] / 1024:.1f} MiB  CPU at rest {idle_cpu:.2f} s in "
              f"{REST:.0f} s  ({pods} pods){writes}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100, help="running pods at synchronize")
    parser.add_argument("--part", choices=("clients", "daemon", "both"), default="both")
    parser.add_argument("--events", action="store_true",
                        help="the daemon with the publisher on writes Events too ([events])")
    parser.add_argument("--api", choices=("https", "http"), default="https",
                        help="the daemon's API server over TLS (the test CA) or plain HTTP")
    parser.add_argument("--kubeconfig", choices=("yaml", "json"), default="yaml",
                        help="the daemon's kubeconfig format (JSON: read without PyYAML)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nri-publisher-rss-") as tmp:
        workdir = Path(tmp)
        if args.part in ("clients", "both"):
            clients(workdir)
        if args.part in ("daemon", "both"):
            for publisher in (False, True):
                asyncio.run(daemon(workdir, args.pods, publisher, events=args.events,
                                   tls=args.api == "https", form=args.kubeconfig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
