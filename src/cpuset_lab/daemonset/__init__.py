"""The DaemonSet's pod as a kubelet would run it: the rendered ``deploy/kubernetes`` manifests
translated into the CRI ``PodSandboxConfig`` and ``ContainerConfig`` a kubelet sends, the volumes
it prepares first and the probes it polls (issue 33).

Only the node's host paths change (each ``hostPath`` maps to a lab path; the lab's containerd
keeps its sockets in private directories), the image reference is the lab's, and, because the lab
has no CNI, ``host_network_override`` runs the sandbox in the node's network namespace although
the manifest says ``hostNetwork: false``; every such change is recorded in ``overrides``.

Strict on purpose: a field the translation does not carry over raises
:class:`UntranslatedFieldError` naming its path, so a manifest change cannot silently make the
lab's pod differ from the cluster's. Fields with no effect on one node without an API server are
listed in :data:`ALLOWED` with their reason and land in ``not_applied``.

Not produced (the kubelet adds them outside the manifest): the ``/etc/hosts`` and
termination-log mounts, the service-link environment, DNS config, the controller's
``controller-revision-hash`` label and the kubelet's bookkeeping annotations.

The modules: ``pod`` (:func:`translate` and the sandbox), ``container`` with ``env``,
``security``, ``container_resources`` and ``probes`` (its parts), ``volumes`` (volumes and
mounts read from the manifest), ``kubelet_volumes`` (what the kubelet does to them on the node:
hostPath type checks, the ConfigMap atomic writer), ``manifest`` (typed readers, the field
allow-list, the rendered objects) and ``lab_node`` (the lab's side of the translation).
"""

from cpuset_lab.daemonset.container_resources import (
    BEST_EFFORT_OOM_SCORE_ADJ,
    CRITICAL_OOM_SCORE_ADJ,
    NODE_CRITICAL_CLASS,
)
from cpuset_lab.daemonset.kubelet_volumes import (
    HOST_PATH_TYPES,
    ConfigMapVolume,
    HostPathCheckError,
    HostPathVolume,
    check_host_path,
    update_configmap,
    write_configmap,
)
from cpuset_lab.daemonset.lab_node import LabNode, Override
from cpuset_lab.daemonset.manifest import (
    ALLOWED,
    Allowance,
    ManifestError,
    NotApplied,
    UntranslatedFieldError,
)
from cpuset_lab.daemonset.pod import DaemonSetPod, translate
from cpuset_lab.daemonset.probes import Probe

__all__ = [
    "ALLOWED",
    "BEST_EFFORT_OOM_SCORE_ADJ",
    "CRITICAL_OOM_SCORE_ADJ",
    "HOST_PATH_TYPES",
    "NODE_CRITICAL_CLASS",
    "Allowance",
    "ConfigMapVolume",
    "DaemonSetPod",
    "HostPathCheckError",
    "HostPathVolume",
    "LabNode",
    "ManifestError",
    "NotApplied",
    "Override",
    "Probe",
    "UntranslatedFieldError",
    "check_host_path",
    "translate",
    "update_configmap",
    "write_configmap",
]
