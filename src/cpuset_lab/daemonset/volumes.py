"""The pod's ``volumes`` and the container's ``volumeMounts``: each ``hostPath`` mapped to the lab
path that stands for it, each ``configMap`` filled from the same manifests, each mount a CRI
``Mount`` of the volume's lab path. What the kubelet then does to them on the node is
:mod:`cpuset_lab.daemonset.kubelet_volumes`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.daemonset.kubelet_volumes import HOST_PATH_TYPES, ConfigMapVolume, HostPathVolume
from cpuset_lab.daemonset.lab_node import Override, PodFacts
from cpuset_lab.daemonset.manifest import (
    FieldReader,
    ManifestError,
    Object,
    UntranslatedFieldError,
    as_bool,
    as_list,
    as_str,
    as_str_map,
    find_one,
)

Volume = HostPathVolume | ConfigMapVolume


def pod_volumes(reader: FieldReader, objects: list[Object], value: object,
                pod: PodFacts) -> dict[str, Volume]:
    """Every volume by name, hostPaths mapped to the lab's paths (all of them: an unmapped or an
    unused mapping is an error)."""
    path = "spec.template.spec.volumes"
    volumes: dict[str, Volume] = {}
    for index, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{index}]"
        volume = reader.fields(entry, entry_path, {"name", "hostPath", "configMap"})
        name = as_str(volume["name"], f"{entry_path}.name")
        if "hostPath" in volume:
            volumes[name] = _host_path(reader, volume["hostPath"], f"{entry_path}.hostPath",
                                       name, pod)
        elif "configMap" in volume:
            volumes[name] = _config_map(reader, objects, volume["configMap"],
                                        f"{entry_path}.configMap", name=name, pod=pod)
        else:
            raise UntranslatedFieldError(entry_path, "a volume with no hostPath or configMap")
    used = {v.manifest_path for v in volumes.values() if isinstance(v, HostPathVolume)}
    if unused := sorted(set(pod.node.host_paths) - used):
        raise ManifestError(f"lab host_paths {unused} name no hostPath volume of the manifest")
    return volumes


def _host_path(reader: FieldReader, value: object, path: str, name: str,
               pod: PodFacts) -> HostPathVolume:
    host = reader.fields(value, path, {"path", "type"})
    manifest_path = as_str(host["path"], f"{path}.path")
    kind = as_str(host.get("type", ""), f"{path}.type")
    if kind not in HOST_PATH_TYPES:
        raise ManifestError(f"{path}.type: unknown hostPath type {kind!r}")
    if manifest_path not in pod.node.host_paths:
        raise ManifestError(f"{path}.path: no lab path given for {manifest_path} "
                            f"(volume {name!r})")
    lab_path = Path(pod.node.host_paths[manifest_path])
    pod.overrides.append(Override(f"{path}.path", manifest_path, str(lab_path),
                                  "the lab node's own path for it"))
    return HostPathVolume(name=name, manifest_path=manifest_path, lab_path=lab_path, type=kind)


def _config_map(reader: FieldReader, objects: list[Object], value: object, path: str, *,
                name: str, pod: PodFacts) -> ConfigMapVolume:
    """The ConfigMap's files from the same manifests: every key, or only the ``items``."""
    source = reader.fields(value, path, {"name", "items"})
    config_map = as_str(source["name"], f"{path}.name")
    found = reader.fields(find_one(objects, "ConfigMap", config_map),
                          f"<ConfigMap {config_map}>", {"apiVersion", "kind", "metadata", "data"})
    data = as_str_map(found.get("data", {}), f"<ConfigMap {config_map}>.data")
    files = dict(data)
    if "items" in source:
        files = {}
        for index, entry in enumerate(as_list(source["items"], f"{path}.items")):
            item_path = f"{path}.items[{index}]"
            item = reader.fields(entry, item_path, {"key", "path"})
            key = as_str(item["key"], f"{item_path}.key")
            if key not in data:
                raise ManifestError(f"{item_path}.key: ConfigMap {config_map!r} has no {key!r}")
            files[as_str(item["path"], f"{item_path}.path")] = data[key]
    return ConfigMapVolume(name=name, config_map=config_map,
                           directory=pod.node.volumes_dir / name, files=MappingProxyType(files))


_PROPAGATION: Final = {"None": pb.PROPAGATION_PRIVATE,
                       "HostToContainer": pb.PROPAGATION_HOST_TO_CONTAINER,
                       "Bidirectional": pb.PROPAGATION_BIDIRECTIONAL}


def container_mounts(reader: FieldReader, value: object, path: str,
                     volumes: Mapping[str, Volume]) -> list[pb.Mount]:
    """Each volumeMount as a CRI ``Mount`` of the volume's lab path. A ConfigMap volume is always
    read-only (the kubelet mounts API data volumes read-only whatever the mount says)."""
    mounts = []
    for index, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{index}]"
        mount = reader.fields(entry, entry_path, {"name", "mountPath", "readOnly",
                                                  "mountPropagation"})
        name = as_str(mount["name"], f"{entry_path}.name")
        if name not in volumes:
            raise ManifestError(f"{entry_path}.name: no volume named {name!r}")
        volume = volumes[name]
        propagation = as_str(mount.get("mountPropagation", "None"),
                             f"{entry_path}.mountPropagation")
        if propagation not in _PROPAGATION:
            raise ManifestError(f"{entry_path}.mountPropagation: unknown mode {propagation!r}")
        is_config = isinstance(volume, ConfigMapVolume)
        host_path = volume.directory if isinstance(volume, ConfigMapVolume) else volume.lab_path
        mounts.append(pb.Mount(
            container_path=as_str(mount["mountPath"], f"{entry_path}.mountPath"),
            host_path=str(host_path),
            readonly=is_config or as_bool(mount.get("readOnly", False), f"{entry_path}.readOnly"),
            propagation=_PROPAGATION[propagation]))
    return mounts
