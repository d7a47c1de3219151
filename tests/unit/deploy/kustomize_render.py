"""The deployment rendered by kustomize with components, for the components' tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.deploy.schema import KUBERNETES


def render(tmp_path: Path, *components: str) -> list[dict[str, Any]]:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [str(Path("..") / "base")],
        "components": [str(Path("..") / "base" / "components" / name) for name in components]}))
    shutil.copytree(KUBERNETES, tmp_path / "base")
    rendered = subprocess.run(["kubectl", "kustomize", str(overlay)], check=True,
                              capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(rendered) if d]


def pod_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [daemonset] = [o for o in objects if o["kind"] == "DaemonSet"]
    spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
    return spec


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="kubectl is not installed")
