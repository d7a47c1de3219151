"""Pods documents on a topology file and the plan command run over them, for the plan tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from cpuset_cli.commands.plan import plan
from tests.builders.kube import container

GUARANTEED = {"memory": "1Gi"}


def cpus(name: str, count: str | None, **extra: Any) -> dict[str, Any]:
    """A container with a CPU limit (and a memory limit, so the pod can be Guaranteed)."""
    return container(name, limits={"cpu": count, **GUARANTEED} if count is not None else None,
                     **extra)


def invoke(machine: Path, document: object, *args: str, name: str = "pods.json") -> Result:
    path = machine.parent / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return CliRunner().invoke(plan, ["--pods", str(path), "--topology", str(machine), *args])


def steps(result: Result) -> list[dict[str, Any]]:
    document: dict[str, Any] = json.loads(result.stdout)
    found: list[dict[str, Any]] = document["steps"]
    return found
