"""Every example in docs/library.md runs and prints exactly the output the document shows
(here against the source tree; the dist nox session runs them again against the installed
cpuset-core wheel alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.doc_examples import Example, examples, main, run

DOC = Path(__file__).resolve().parents[3] / "docs" / "library.md"
EXAMPLES = examples(DOC.read_text())


def test_library_md_has_its_examples() -> None:
    # The admission walk-through and the synchronize one.
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"line {e.line}")
def test_each_library_example_prints_what_the_document_says(example: Example) -> None:
    assert run(example, str(DOC)) == example.output


def test_a_python_block_without_its_output_is_refused() -> None:
    text = "```python\nprint(1)\n```\n\nIts output:\n\n```text\n1\n```\n\n```python\nx = 1\n```\n"
    with pytest.raises(ValueError, match="2 python blocks but 1"):
        examples(text)


def test_an_example_printing_something_else_fails_the_check(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nprint('a')\n```\n\nIts output:\n\n```text\nb\n```\n")
    assert main([str(doc)]) == 1
    doc.write_text("```python\nprint('b')\n```\n\nIts output:\n\n```text\nb\n```\n")
    assert main([str(doc)]) == 0
