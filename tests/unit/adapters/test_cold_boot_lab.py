"""The cold boot's parts outside a guest: the stand-in kubelet's container command and how it
reads a container's first words, and the units the lab writes beside the shipped one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cpuset_lab.cold_boot import DEPLOY_UNIT, PRIVATE_TMP_DIRS, kubelet_unit, plugin_drop_in
from cpuset_lab.kubelet_standin import command, first_words


def test_a_containers_first_instruction_reads_where_it_runs(tmp_path: Path) -> None:
    shell, flag, script = command()
    assert (shell, flag) == ("/bin/sh", "-c")
    assert script.startswith("grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; ")
    # The script is the image's entrypoint after it: run its first words here (busybox's
    # grep and this machine's agree on -E), with the loop cut off.
    first = script.split("; ")[0]
    done = subprocess.run(["/bin/sh", "-c", first], capture_output=True, text=True, check=True)
    log = tmp_path / "0.log"
    log.write_text("".join(f"2026-11-25T23:00:00.000000000Z stdout F {line}\n"
                           for line in done.stdout.splitlines()))
    words = first_words(log)
    assert set(words) == {"Cpus_allowed_list", "Mems_allowed_list"}
    own = Path("/proc/self/status").read_text()
    assert f"Cpus_allowed_list:\t{words['Cpus_allowed_list']}" in own


def test_first_words_ignore_other_output_and_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_text("2026-11-25T23:00:00Z stdout F hello\n"
                   "2026-11-25T23:00:00Z stdout F Cpus_allowed_list:\t0,2-3\n"
                   "garbage\n"
                   "2026-11-25T23:00:00Z stderr F Mems_allowed_list:\t0\n")
    assert first_words(log) == {"Cpus_allowed_list": "0,2-3", "Mems_allowed_list": "0"}


def test_the_kubelet_unit_is_ordered_after_containerd_and_stays_active() -> None:
    text = kubelet_unit(python="/v/bin/python", cri=Path("/w/c.sock"),
                        manifest=Path("/r/m.json"), record=Path("/r"), log=Path("/r/k.log"))
    lines = text.splitlines()
    for line in ("After=containerd.service", "Wants=containerd.service", "Type=oneshot",
                 "RemainAfterExit=yes", "StandardOutput=append:/r/k.log",
                 "ExecStart=/v/bin/python -m cpuset_lab.kubelet_standin --cri /w/c.sock "
                 "--manifest /r/m.json --record /r"):
        assert line in lines


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_shipped_unit_with_the_labs_drop_in(tmp_path: Path) -> None:
    unit = tmp_path / DEPLOY_UNIT.name
    unit.write_text(DEPLOY_UNIT.read_text())
    drop_in = tmp_path / f"{DEPLOY_UNIT.name}.d"
    drop_in.mkdir()
    (drop_in / "lab.conf").write_text(plugin_drop_in(
        python="/bin/true", config=tmp_path / "c.toml", nri_socket=tmp_path / "nri.sock",
        cri_socket=tmp_path / "cri.sock", log=tmp_path / "plugin.log"))
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                              text=True, check=False)
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, "")


@pytest.mark.parametrize(("config", "shares_tmp"), [
    (Path("/tmp/ci/build/vm-results/systemd/plugin.toml"), True),
    (Path("/var/tmp/r/plugin.toml"), True),
    (Path("/srv/ci/build/vm-results/systemd/plugin.toml"), False),
])
def test_the_drop_in_shares_tmp_only_when_the_plugin_needs_a_file_there(
        config: Path, shares_tmp: bool) -> None:
    """The shipped unit's PrivateTmp=yes hides a CI clone or results directory under /tmp."""
    lines = plugin_drop_in(python="/usr/bin/python3", config=config,
                           nri_socket=Path("/run/n.sock"), cri_socket=Path("/run/c.sock"),
                           log=Path("/srv/p.log"), source=Path("/srv/ci/src")).splitlines()
    assert ("PrivateTmp=no" in lines) is shares_tmp


def test_a_venv_interpreter_under_tmp_shares_tmp_though_it_links_elsewhere(
        tmp_path: Path) -> None:
    """A venv's python is a symlink out of /tmp: its directory (pyvenv.cfg, site-packages) is
    what must stay visible."""
    if not tmp_path.resolve().is_relative_to(PRIVATE_TMP_DIRS[0]):
        pytest.skip("pytest's base directory is not under /tmp here")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to("/usr/bin/python3")
    lines = plugin_drop_in(python=str(python), config=Path("/srv/plugin.toml"),
                           nri_socket=Path("/run/n.sock"), cri_socket=Path("/run/c.sock"),
                           log=Path("/srv/p.log"), source=Path("/srv/ci/src")).splitlines()
    assert "PrivateTmp=no" in lines
