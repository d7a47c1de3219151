"""deploy/preinstalled/{install,uninstall}.sh, run in a scratch tree with a stand-in venv.

The venv's ``python -m pip`` and ``nri-cpuset`` are stubs that record their arguments, so the
scripts' own logic (config handling, the pre-flight checks, what they remove) runs for real
without a network or a containerd.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.deploy.schema import DEPLOY, EXAMPLE_CONFIG, REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the scripts refuse to run as non-root")

INSTALL = DEPLOY / "preinstalled" / "install.sh"
SRC = Path(__file__).resolve().parents[3] / "src"
UNINSTALL = DEPLOY / "preinstalled" / "uninstall.sh"


@dataclass(frozen=True)
class Node:
    """A scratch layout standing in for the host's paths."""

    root: Path

    @property
    def venv(self) -> Path:
        return self.root / "opt" / "venv"

    @property
    def config(self) -> Path:
        return self.root / "etc" / "config.toml"

    @property
    def launcher(self) -> Path:
        return self.root / "plugins" / "99-nri-cpuset"

    @property
    def calls(self) -> list[str]:
        log = self.root / "calls"
        return log.read_text().splitlines() if log.exists() else []

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHON": sys.executable, "NRI_CPUSET_PREFIX": str(self.venv.parent),
                "NRI_PLUGIN_DIR": str(self.launcher.parent), "NRI_CPUSET_CONFIG": str(self.config),
                "NRI_CPUSET_LOG_FILE": str(self.root / "log"),
                "NRI_CPUSET_RUN_DIR": str(self.root / "run")}

    def run(self, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(script), *args], env=self.env(), capture_output=True,
                              text=True, check=False)


@pytest.fixture
def node(tmp_path: Path) -> Node:
    node = Node(tmp_path)
    bin_dir = node.venv / "bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls"
    (bin_dir / "python").write_text(
        f'#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then echo "pip $*" >>{calls}; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n')
    # check-config is the real command (the pre-flight check must be the plugin's own);
    # everything else is recorded.
    (bin_dir / "nri-cpuset").write_text(
        f'#!/bin/sh\necho "nri-cpuset $*" >>{calls}\n'
        f'if [ "$1" = check-config ]; then PYTHONPATH={SRC} exec {sys.executable} -m cpuset_cli '
        f'"$@"; fi\n'
        f'[ "$1" = --version ] && echo "nri-cpuset, version 0.0.0"\nexit 0\n')
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    return node


def _launcher_calls(node: Node) -> list[str]:
    return [c for c in node.calls if c.startswith("nri-cpuset install-launcher")]


def _use_state_file(node: Node, policy: str, *, allow: bool = False) -> None:
    state = node.root / "cpu_manager_state"
    state.write_text(json.dumps({"policyName": policy, "defaultCpuSet": "", "checksum": 1}))
    node.config.parent.mkdir(parents=True, exist_ok=True)
    node.config.write_text(f'[runtime]\nkubelet_cpu_manager_state = "{state}"\n'
                           f"allow_static_cpu_manager = {str(allow).lower()}\n")


def test_a_first_install_writes_the_default_config_and_the_launcher(node: Node) -> None:
    result = node.run(INSTALL, "/src/nri-cpuset")
    assert result.returncode == 0, result.stderr
    assert node.config.read_text() == EXAMPLE_CONFIG.read_text()
    assert any(c.startswith("pip -m pip install") and c.endswith("/src/nri-cpuset")
               for c in node.calls)
    assert _launcher_calls(node) == [
        f"nri-cpuset install-launcher --plugin-dir {node.launcher.parent} "
        f"--config {node.config} --log-file {node.root / 'log'}"]


def _pip_install_arguments(node: Node) -> list[str]:
    prefix = "pip -m pip install --quiet --no-cache-dir --upgrade "
    return [c.removeprefix(prefix) for c in node.calls if c.startswith(prefix)]


def test_the_source_tree_installs_the_engine_it_pins_along_with_the_plugin(node: Node) -> None:
    # nri-cpuset requires cpuset-core of its own version; src/ is that project in this tree.
    result = node.run(INSTALL)
    assert result.returncode == 0, result.stderr
    assert _pip_install_arguments(node) == [f"{REPO}/src {REPO}"]
    assert not any("uninstall" in c for c in node.calls)  # nothing old to remove


def test_an_nri_cpuset_that_still_contains_the_engine_is_removed_before_the_upgrade(
        node: Node) -> None:
    # 0.1.0 shipped cpuset_core inside nri-cpuset: upgraded in place, pip would delete the
    # engine's files after installing cpuset-core. The stub's `pip show` lists such a version.
    python = node.venv / "bin" / "python"
    python.write_text(
        '#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then\n'
        f'  echo "pip $*" >>{node.root / "calls"}\n'
        '  [ "$3" = show ] && printf "Files:\\n  cpuset_cli/main.py\\n  cpuset_core/engine.py\\n"\n'
        f'  exit 0\nfi\nexec {sys.executable} "$@"\n')
    result = node.run(INSTALL)
    assert result.returncode == 0, result.stderr
    pip = [c for c in node.calls if c.startswith("pip -m pip") and " show " not in c]
    assert pip[0] == "pip -m pip uninstall --quiet --yes nri-cpuset"
    assert pip[1].startswith("pip -m pip install ")
    assert "still contains the engine" in result.stdout


def test_a_wheel_takes_the_engine_wheel_from_its_own_directory(node: Node) -> None:
    wheels = node.root / "wheels"
    wheels.mkdir()
    wheel = wheels / "nri_cpuset-9.9.9-py3-none-any.whl"
    wheel.write_bytes(b"")
    result = node.run(INSTALL, str(wheel))
    assert result.returncode == 0, result.stderr
    assert _pip_install_arguments(node) == [f"--find-links {wheels} {wheel}"]


def test_an_existing_config_is_never_overwritten(node: Node) -> None:
    _use_state_file(node, "none")
    before = node.config.read_text()
    result = node.run(INSTALL)
    assert result.returncode == 0, result.stderr
    assert node.config.read_text() == before
    assert "keeping the existing config" in result.stdout
    assert len(_launcher_calls(node)) == 1


def test_an_unparsable_config_stops_before_the_launcher(node: Node) -> None:
    node.config.parent.mkdir(parents=True)
    node.config.write_text("[runtime\n")
    result = node.run(INSTALL)
    assert result.returncode != 0
    assert str(node.config) in result.stderr
    assert _launcher_calls(node) == []


def test_an_unknown_key_stops_before_the_launcher_naming_it(node: Node) -> None:
    # Valid TOML, but `run` would exit 2 on it, and containerd 1.7 would not start.
    node.config.parent.mkdir(parents=True)
    node.config.write_text('[cpus]\nreservd = "0"\n')
    result = node.run(INSTALL)
    assert result.returncode != 0
    assert "cpus.reservd: unknown key" in result.stderr
    assert _launcher_calls(node) == []


def test_the_static_cpu_manager_stops_the_install_unless_allowed(node: Node) -> None:
    _use_state_file(node, "static")
    refused = node.run(INSTALL)
    assert refused.returncode != 0
    assert "static CPU manager" in refused.stderr
    assert _launcher_calls(node) == []
    _use_state_file(node, "static", allow=True)
    assert node.run(INSTALL).returncode == 0
    assert len(_launcher_calls(node)) == 1


def test_uninstall_removes_the_launcher_and_venv_and_keeps_the_config(node: Node) -> None:
    node.launcher.parent.mkdir(parents=True)
    node.launcher.write_text("#!/bin/sh\n")
    _use_state_file(node, "none")
    result = node.run(UNINSTALL)
    assert result.returncode == 0, result.stderr
    assert not node.launcher.exists()
    assert not node.venv.exists()
    assert node.config.exists()


def test_uninstall_purge_also_removes_config_log_and_status_directory(node: Node) -> None:
    _use_state_file(node, "none")
    (node.root / "log").write_text("")
    (node.root / "run").mkdir()
    assert node.run(UNINSTALL, "--purge").returncode == 0
    assert not node.config.exists()
    assert not (node.root / "log").exists()
    assert not (node.root / "run").exists()


def test_uninstall_leaves_a_venv_that_is_not_nri_cpusets(node: Node) -> None:
    (node.venv / "bin" / "nri-cpuset").unlink()
    assert node.run(UNINSTALL).returncode == 0
    assert node.venv.exists()


def test_uninstall_refuses_unknown_arguments(node: Node) -> None:
    result = node.run(UNINSTALL, "--force")
    assert result.returncode != 0
    assert node.venv.exists()
