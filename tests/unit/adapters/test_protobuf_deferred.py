"""A deferred module is imported at its first attribute read, in its stand-in's place, and
protobuf's pure-Python messages are deferred only while that can still help (their effect on
a fresh daemon: tests/unit/cli/test_daemon_imports.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters import protobuf_deferred
from cpuset_adapters.protobuf_deferred import DeferredModule, defer_pure_python_messages, load

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture
def heavy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``deferpkg`` whose submodule ``heavy`` counts its executions."""
    package = tmp_path / "deferpkg"
    package.mkdir()
    (package / "__init__.py").write_text("executed = []\n")
    (package / "heavy.py").write_text(
        "import deferpkg\ndeferpkg.executed.append('heavy')\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferpkg.heavy"
    for name in ("deferpkg.heavy", "deferpkg"):
        sys.modules.pop(name, None)


def test_a_deferred_module_is_imported_at_its_first_attribute_read(heavy_package: str) -> None:
    import deferpkg  # type: ignore[import-not-found]

    sys.modules[heavy_package] = DeferredModule(heavy_package)
    from deferpkg import heavy  # type: ignore[import-not-found]

    assert isinstance(heavy, DeferredModule)
    assert deferpkg.executed == []
    assert heavy.VALUE == 42
    assert deferpkg.executed == ["heavy"]
    real = sys.modules[heavy_package]
    assert not isinstance(real, DeferredModule)
    assert deferpkg.heavy is real
    assert heavy.VALUE == 42  # the stand-in still answers, through the real module
    assert deferpkg.executed == ["heavy"]


def test_loading_a_module_never_deferred_imports_it(heavy_package: str) -> None:
    assert load(heavy_package).VALUE == 42


def test_a_missing_attribute_of_the_real_module_is_an_attribute_error(
        heavy_package: str) -> None:
    sys.modules[heavy_package] = DeferredModule(heavy_package)
    with pytest.raises(AttributeError, match="nothing"):
        _ = sys.modules[heavy_package].nothing


def test_once_protobuf_is_loaded_nothing_is_deferred() -> None:
    from cpuset_adapters.nri.proto import nri_pb2  # noqa: F401 - protobuf loaded

    already = isinstance(sys.modules.get(protobuf_deferred.PURE_PYTHON_MESSAGES),
                         DeferredModule)
    assert defer_pure_python_messages() is already


FRESH = """
import sys
from cpuset_adapters.protobuf_deferred import defer_pure_python_messages
print(defer_pure_python_messages(), defer_pure_python_messages())
"""


@pytest.mark.parametrize(("backend", "deferred"), [("upb", "True True"),
                                                   ("python", "False False")])
def test_a_fresh_process_defers_them_on_upb_only(backend: str, deferred: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FRESH], capture_output=True, text=True, check=True, timeout=60,
        env={"PYTHONPATH": str(SRC), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": backend})
    assert result.stdout.split() == deferred.split()
