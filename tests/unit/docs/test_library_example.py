"""The example in docs/library.md runs and prints exactly the output the document shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "library.md"


def test_library_example_prints_what_the_document_says() -> None:
    text = DOC.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    shown = re.search(r"Its output:\n\n```text\n(.*?)```", text, re.S)
    assert code is not None
    assert shown is not None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code.group(1), str(DOC), "exec"), {})  # noqa: S102 - our own document
    assert printed.getvalue() == shown.group(1)
