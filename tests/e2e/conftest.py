"""The e2e lab: one private NRI-enabled containerd per test session (``cpuset_lab``).

Needs root and ``bash scripts/install-containerd``. Without them every e2e test is skipped with the
reason, unless ``NRI_CPUSET_E2E_REQUIRED=1`` (CI, ``nox -s e2e``), which turns that into a failure.
Each test gets ``cri`` (a CRI client) and leaves no pod behind: the teardown removes whatever is
left and fails the test that leaked it. ``plugin`` is ``nri-cpuset run`` connected to the lab;
``api`` the lab's fake Kubernetes API server (Events, pods, topology objects).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import ContainerdNotInstalled, find_installation
from cpuset_lab.image import BUSYBOX_PATH
from cpuset_lab.kube_api import FakeApi, serve
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.quiet_host import Snapshot
from tests.e2e.plugin_harness import Plugin, serving
from tests.e2e.quiet_harness import QuietPlugin, held_host

REQUIRED = os.environ.get("NRI_CPUSET_E2E_REQUIRED") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"NRI_CPUSET_E2E_REQUIRED=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabContainerd]:
    """A started containerd (NRI enabled, no plugins) with the lab image imported."""
    if os.geteuid() != 0:
        _unavailable("the e2e lab runs containerd and needs root")
    if shutil.which("umount") is None or not BUSYBOX_PATH.is_file():
        _unavailable(f"{BUSYBOX_PATH} missing: run `bash scripts/install-containerd`")
    try:
        installation = find_installation()
    except ContainerdNotInstalled as err:
        _unavailable(str(err))
        raise  # unreachable: _unavailable always raises
    lab = LabContainerd(tmp_path_factory.mktemp("lab"), installation=installation)
    try:
        lab.start()
        lab.import_image()
        yield lab
    finally:
        lab.close()


@pytest.fixture
def cri(lab: LabContainerd) -> Iterator[KubeletClient]:
    """The lab's CRI client; pods a test leaves behind are removed and fail the test."""
    client = lab.client()
    yield client
    if not lab.running:  # a test that stopped or killed containerd must bring it back
        lab.start()
    leaked = lab.cleanup()
    assert leaked == 0, f"the test left {leaked} pod(s) running"


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    """``nri-cpuset run`` against the lab, synchronized; stopped cleanly (exit code 0) after
    the test's pods are gone."""
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log")) as running:
        yield running


@pytest.fixture
def api() -> Iterator[FakeApi]:
    """The lab's fake Kubernetes API server on a free port, for the test alone."""
    with serve() as running:
        yield running


@pytest.fixture
def host() -> Iterator[Snapshot]:
    """The host's quiet-CPU files as they were, to this test alone (its lock held); put back
    and checked at the end."""
    with held_host() as saved:
        yield saved


@pytest.fixture
def quiet_plugin(lab: LabContainerd, cri: KubeletClient,
                 tmp_path: Path) -> Iterator[QuietPlugin]:
    """The plugin, killed -9 by a test: started by hand."""
    running = QuietPlugin(lab.nri_socket, tmp_path)
    running.cri_socket = lab.cri_address
    running.start()
    try:
        running.wait_synchronized()
        yield running
    finally:
        if running.process is not None:
            lab.cleanup()
            running.stop()
