"""cpuset_core's public API stays what the snapshot (public_api.txt) recorded: a removed, renamed
or changed export fails here until the snapshot, and the version, are changed on purpose."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cpuset_core
from tests.unit.core import public_api
from tests.unit.core.public_api import SNAPSHOT, UPDATE_COMMAND, describe, differences

REPO = Path(__file__).resolve().parents[3]


def _explain(changed: list[str]) -> str:
    return "\n".join([
        "cpuset_core's public API differs from tests/unit/core/public_api.txt "
        "(- recorded, + now):", *changed,
        "If this is a mistake, restore the API. If it is on purpose: change __version__ in "
        "src/cpuset_core/_version.py per semantic versioning (a removed or changed name is "
        "breaking; docs/library.md, 'Compatibility'), say what changed in CHANGELOG.md, then "
        f"record the API with `{UPDATE_COMMAND}` from the repository root."])


def test_the_public_api_is_the_one_the_snapshot_recorded() -> None:
    changed = differences(SNAPSHOT.read_text(), describe(cpuset_core))
    assert not changed, _explain(changed)


def test_every_exported_name_exists_and_is_listed_once() -> None:
    assert len(set(cpuset_core.__all__)) == len(cpuset_core.__all__)
    missing = [name for name in cpuset_core.__all__ if not hasattr(cpuset_core, name)]
    assert not missing


def test_the_snapshot_names_every_export() -> None:
    recorded = {line.split(":")[0].split(".")[0] for line in SNAPSHOT.read_text().splitlines()
                if not line.startswith("#")}
    assert recorded == {*cpuset_core.__all__, "__version__"}


# -- the check can fail ------------------------------------------------------------------------


def test_a_removed_export_is_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpuset_core, "__all__", [n for n in cpuset_core.__all__ if n != "stage"])
    changed = differences(SNAPSHOT.read_text(), describe(cpuset_core))
    assert changed == ["- stage: function (updates: collections.abc.Sequence[ContainerUpdate]) "
                       "-> tuple[tuple[ContainerUpdate, ...], ...]"]


def test_a_changed_function_signature_is_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    def classify(pod: object, container: object) -> object:  # the settings argument dropped
        return None

    monkeypatch.setattr(cpuset_core, "classify", classify)
    changed = differences(SNAPSHOT.read_text(), describe(cpuset_core))
    assert len(changed) == 2
    assert changed[0].startswith("- classify: function (pod: PodFacts | None, ")
    assert changed[1] == "+ classify: function (pod: object, container: object) -> object"


def test_a_changed_method_default_is_a_difference() -> None:
    recorded = SNAPSHOT.read_text().replace(
        "CPUSet.parse: classmethod (text: str, *, allow_empty: bool = False)",
        "CPUSet.parse: classmethod (text: str, *, allow_empty: bool = True)")
    assert recorded != SNAPSHOT.read_text()
    changed = differences(recorded, describe(cpuset_core))
    assert [line[:2] for line in changed] == ["- ", "+ "]
    assert all("CPUSet.parse" in line for line in changed)


def test_a_changed_error_reason_is_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpuset_core.InvalidAnnotationError, "reason", "bad-annotation")
    changed = differences(SNAPSHOT.read_text(), describe(cpuset_core))
    assert changed == [
        "- InvalidAnnotationError.reason: class attribute = 'invalid-annotation'",
        "+ InvalidAnnotationError.reason: class attribute = 'bad-annotation'"]


def test_the_failure_says_how_to_record_a_change_and_that_the_version_must_change() -> None:
    message = _explain(["- x: function ()"])
    assert UPDATE_COMMAND in message
    assert "src/cpuset_core/_version.py" in message
    assert "CHANGELOG.md" in message


# -- recording on purpose ----------------------------------------------------------------------


def test_recording_a_changed_api_is_refused_while_the_version_is_unchanged(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    snapshot = tmp_path / "public_api.txt"
    snapshot.write_text(public_api.snapshot_text(cpuset_core, cpuset_core.__version__)
                        .replace("MAX_ID: constant int = 8191", "MAX_ID: constant int = 4095"))
    before = snapshot.read_text()
    monkeypatch.setattr(public_api, "SNAPSHOT", snapshot)
    assert public_api.update() == 1
    assert snapshot.read_text() == before


def test_recording_a_changed_api_under_a_new_version_writes_the_snapshot(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    snapshot = tmp_path / "public_api.txt"
    snapshot.write_text(public_api.snapshot_text(cpuset_core, "0.0.1")
                        .replace("MAX_ID: constant int = 8191", "MAX_ID: constant int = 4095"))
    monkeypatch.setattr(public_api, "SNAPSHOT", snapshot)
    assert public_api.update() == 0
    assert snapshot.read_text() == public_api.snapshot_text(cpuset_core,
                                                            cpuset_core.__version__)


def test_the_description_is_the_same_in_a_fresh_interpreter() -> None:
    # Another process has another hash seed: set and frozenset values must not show it.
    code = ("import cpuset_core; from tests.unit.core.public_api import describe; "
            "print('\\n'.join(describe(cpuset_core)))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, check=True, env={"PYTHONHASHSEED": "12345",
                                                        "PYTHONPATH": str(REPO / "src")})
    assert result.stdout.splitlines() == describe(cpuset_core)
