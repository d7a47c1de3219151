"""What a module imports, read from its source (no import is run)."""

from __future__ import annotations

import ast
from pathlib import Path


def top_level_imports(path: Path) -> set[str]:
    """The top-level packages and modules ``path`` imports by absolute name, wherever in the
    module the import stands (deferred imports count too); relative imports are left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found
