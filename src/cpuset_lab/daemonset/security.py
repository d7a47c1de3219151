"""The container's ``securityContext`` as the kubelet sends it over CRI, with its seccomp profile
and the ``runAsNonRoot`` check the kubelet makes itself."""

from __future__ import annotations

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.daemonset.manifest import (
    FieldReader,
    ManifestError,
    Object,
    UntranslatedFieldError,
    as_bool,
    as_int,
    as_list,
    as_str,
)


def security_context(reader: FieldReader, value: object,
                     path: str) -> tuple[pb.LinuxContainerSecurityContext, bool]:
    """The container's securityContext as the kubelet sends it (no pod-level context to merge:
    the pod's ``securityContext`` is not translated), and whether it is privileged."""
    sc = reader.fields(value, path, {"allowPrivilegeEscalation", "capabilities", "privileged",
                                     "readOnlyRootFilesystem", "runAsUser", "runAsGroup",
                                     "runAsNonRoot", "seccompProfile"})
    privileged = as_bool(sc.get("privileged", False), f"{path}.privileged")
    out = pb.LinuxContainerSecurityContext(
        privileged=privileged,
        readonly_rootfs=as_bool(sc.get("readOnlyRootFilesystem", False),
                                f"{path}.readOnlyRootFilesystem"),
        # allowPrivilegeEscalation unset leaves no_new_privs off; only an explicit false sets it.
        no_new_privs=sc.get("allowPrivilegeEscalation") is False)
    if "capabilities" in sc:
        caps = reader.fields(sc["capabilities"], f"{path}.capabilities", {"add", "drop"})
        out.capabilities.add_capabilities.extend(
            as_str(c, f"{path}.capabilities.add") for c in as_list(caps.get("add", []),
                                                                   f"{path}.capabilities.add"))
        out.capabilities.drop_capabilities.extend(
            as_str(c, f"{path}.capabilities.drop") for c in as_list(caps.get("drop", []),
                                                                    f"{path}.capabilities.drop"))
    if "runAsUser" in sc:
        out.run_as_user.value = as_int(sc["runAsUser"], f"{path}.runAsUser")
    if "runAsGroup" in sc:
        out.run_as_group.value = as_int(sc["runAsGroup"], f"{path}.runAsGroup")
    _check_non_root(sc, path)
    if "seccompProfile" in sc:
        out.seccomp.CopyFrom(_seccomp(reader, sc["seccompProfile"], f"{path}.seccompProfile"))
    return out, privileged


def _check_non_root(sc: Object, path: str) -> None:
    """``runAsNonRoot`` is the kubelet's own check, not a CRI field: false checks nothing; true
    with a known uid refuses uid 0; true with the uid left to the image needs the image's user,
    which this translation does not read."""
    if not as_bool(sc.get("runAsNonRoot", False), f"{path}.runAsNonRoot"):
        return
    if "runAsUser" not in sc:
        raise UntranslatedFieldError(f"{path}.runAsNonRoot", "true needs the image's user")
    if sc["runAsUser"] == 0:
        raise ManifestError(f"{path}: runAsNonRoot is true but runAsUser is 0 (the kubelet "
                            f"refuses to start the container)")


def _seccomp(reader: FieldReader, value: object, path: str) -> pb.SecurityProfile:
    profile = reader.fields(value, path, {"type"})
    kind = as_str(profile["type"], f"{path}.type")
    if kind == "RuntimeDefault":
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault)
    if kind == "Unconfined":
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.Unconfined)
    raise UntranslatedFieldError(f"{path}.type", f"seccomp profile type {kind!r}")
