"""The runnable examples of a Markdown document: each ```python block, followed by "Its output:"
and a ```text block with exactly what it prints.

The unit tests run docs/library.md's examples against the source tree; the ``dist`` nox session
runs this file with the interpreter of a virtual environment that has only the cpuset-core
wheel, so the document is checked as a user reads it. Standard library only, for that reason:

    python tests/support/doc_examples.py docs/library.md
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_EXAMPLE = re.compile(r"```python\n(?P<code>.*?)```\n\nIts output:\n\n```text\n(?P<output>.*?)```",
                      re.S)


@dataclass(frozen=True)
class Example:
    line: int
    """Where its code block starts in the document (1-based), for messages."""
    code: str
    output: str


def examples(text: str) -> list[Example]:
    """Every example; raises ``ValueError`` for a python block that shows no output after it
    (an example nothing checks would rot)."""
    found = [Example(line=text.count("\n", 0, m.start()) + 1, code=m.group("code"),
                     output=m.group("output")) for m in _EXAMPLE.finditer(text)]
    blocks = text.count("```python\n")
    if blocks != len(found):
        raise ValueError(f"{blocks} python blocks but {len(found)} followed by 'Its output:' and "
                         f"a text block")
    return found


def run(example: Example, source: str) -> str:
    """Run the example in a namespace of its own (each stands alone, as a reader copies it) and
    return what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example.code, f"{source}:{example.line}", "exec"), {})  # noqa: S102
    return printed.getvalue()


def main(argv: list[str]) -> int:
    [document] = argv
    path = Path(document)
    found = examples(path.read_text())
    failed = 0
    for example in found:
        printed = run(example, str(path))
        if printed != example.output:
            failed += 1
            print(f"{path}:{example.line}: the example printed\n{printed}"
                  f"instead of what the document shows\n{example.output}", file=sys.stderr)
    print(f"{path}: {len(found) - failed} examples print what the document shows, {failed} do not")
    return 1 if failed or not found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
