"""Host-side deployment files: the systemd unit, the containerd snippets, the shell scripts."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path, PurePosixPath

import pytest

from tests.unit.deploy.schema import DEFAULT_CONFIG_PATH, DEFAULTS, DEPLOY

UNIT = DEPLOY / "systemd" / "nri-cpuset.service"
INSTALL = DEPLOY / "preinstalled" / "install.sh"
SNIPPETS = {"1.7": (DEPLOY / "containerd" / "nri-1.7.toml", 2),
            "2.x": (DEPLOY / "containerd" / "nri-2.x.toml", 3)}
SCRIPTS = sorted(DEPLOY.rglob("*.sh"))
NRI = "io.containerd.nri.v1.nri"
LAB_CONTAINERD = Path("/var/lib/nri-cpuset-lab/containerd/usr/bin/containerd")
LAB_CONTAINERD_2 = Path("/var/lib/nri-cpuset-lab/containerd-2/usr/bin/containerd")


def unit_settings(text: str) -> dict[str, dict[str, list[str]]]:
    """Parse a systemd unit: section → key → every value given (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def _words(values: list[str]) -> set[str]:
    return {word for value in values for word in value.split()}


def _install_default(variable: str) -> str:
    match = re.search(r"\$\{" + variable + r":-([^}]+)\}", INSTALL.read_text())
    assert match, f"install.sh has no default for {variable}"
    return match.group(1)


def _unit() -> dict[str, dict[str, list[str]]]:
    return unit_settings(UNIT.read_text())


def test_the_unit_parser_keeps_repeated_keys_and_skips_comments() -> None:
    parsed = unit_settings("# c\n[Unit]\nAfter=a\nAfter=b c\n; d\n[Service]\nX=1=2\n")
    assert parsed == {"Unit": {"After": ["a", "b c"]}, "Service": {"X": ["1=2"]}}


def test_the_unit_starts_after_containerd_and_before_the_kubelet() -> None:
    unit = _unit()["Unit"]
    assert "containerd.service" in _words(unit["After"])
    assert "containerd.service" in _words(unit.get("Wants", []) + unit.get("Requires", []))
    assert "kubelet.service" in _words(unit["Before"])


def test_the_kubelet_waits_for_the_plugin_to_say_it_is_ready() -> None:
    # Before= orders against the start job's end: with Type=notify that is READY=1, which the
    # plugin sends after its first Synchronize (cpuset_cli.daemon.ready_notice).
    service = _unit()["Service"]
    assert service["Type"] == ["notify"]
    assert service.get("NotifyAccess", ["main"]) == ["main"]
    assert service["TimeoutStartSec"] == ["60s"]


def test_the_unit_runs_the_installed_venv_with_the_default_config() -> None:
    service = _unit()["Service"]
    venv = f"{_install_default('NRI_CPUSET_PREFIX')}/venv"
    assert service["ExecStart"] == [f"{venv}/bin/nri-cpuset run --config {DEFAULT_CONFIG_PATH}"]
    assert service["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert service["Restart"] == ["always"]


def test_the_unit_is_read_only_except_for_the_status_socket_directory_and_cgroups() -> None:
    service = _unit()["Service"]
    status_dir = PurePosixPath(DEFAULTS["runtime"]["status_socket"]).parent
    assert service["ProtectSystem"] == ["strict"]
    assert [f"/run/{d}" for d in service["RuntimeDirectory"]] == [str(status_dir)]
    # The kernel fast path writes containers' cpusets under the configured cgroup root.
    assert service["ReadWritePaths"] == [DEFAULTS["runtime"]["cgroup_root"]]
    assert "ProtectControlGroups" not in service
    assert service["CapabilityBoundingSet"] == [""]
    assert service["NoNewPrivileges"] == ["yes"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    # verify insists that ExecStart exists: point it at a stand-in with the same name.
    stub = tmp_path / "bin" / "nri-cpuset"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    venv_bin = f"{_install_default('NRI_CPUSET_PREFIX')}/venv/bin/"
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text().replace(venv_bin, f"{stub.parent}/"))
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                              text=True, check=False)
    # It reports bad lines on stderr but still exits 0 ("..., ignoring").
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, "")


@pytest.mark.parametrize("version", sorted(SNIPPETS))
def test_containerd_snippets_enable_nri_where_the_plugin_looks(version: str) -> None:
    path, config_version = SNIPPETS[version]
    document = tomllib.loads(path.read_text())
    nri = document["plugins"][NRI]
    assert document["version"] == config_version
    assert nri["disable"] is False
    assert nri["disable_connections"] is False
    assert nri["socket_path"] == DEFAULTS["runtime"]["nri_socket"]
    assert nri["plugin_path"] == _install_default("NRI_PLUGIN_DIR")


def _dumped_nri_section(config: Path, containerd: Path = LAB_CONTAINERD) -> dict[str, object]:
    dumped = subprocess.run([str(containerd), "-c", str(config), "config", "dump"],
                            capture_output=True, text=True, check=True).stdout
    section: dict[str, object] = tomllib.loads(dumped).get("plugins", {}).get(NRI, {})
    return section


@pytest.mark.skipif(not LAB_CONTAINERD.exists(), reason="scripts/install-containerd not run")
def test_containerd_17_reads_its_snippet_as_written() -> None:
    written = tomllib.loads(SNIPPETS["1.7"][0].read_text())["plugins"][NRI]
    assert _dumped_nri_section(SNIPPETS["1.7"][0]) == written


@pytest.mark.skipif(not LAB_CONTAINERD.exists(), reason="scripts/install-containerd not run")
def test_containerd_17_reads_its_snippet_as_an_imported_drop_in(tmp_path: Path) -> None:
    main = tmp_path / "config.toml"
    main.write_text(f'version = 2\nimports = ["{SNIPPETS["1.7"][0]}"]\n')
    assert _dumped_nri_section(main)["disable"] is False


@pytest.mark.skipif(not LAB_CONTAINERD_2.exists(),
                    reason="scripts/install-containerd --runtime 2.x not run")
def test_containerd_2_reads_its_snippet_as_written() -> None:
    written = tomllib.loads(SNIPPETS["2.x"][0].read_text())["plugins"][NRI]
    dumped = _dumped_nri_section(SNIPPETS["2.x"][0], LAB_CONTAINERD_2)
    assert {key: dumped[key] for key in written} == written


def test_there_are_scripts_to_check() -> None:
    assert {p.name for p in SCRIPTS} >= {"install.sh", "uninstall.sh"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_are_strict_bash_that_parses(script: Path) -> None:
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_pass_shellcheck(script: Path) -> None:
    checked = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout
