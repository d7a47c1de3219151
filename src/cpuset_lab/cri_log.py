"""Reading a container's log file as the kubelet's CRI runtime writes it: one record per line,
``<time> <stream> <P|F> <text>``, where ``P`` marks a partial record the next completes."""

from __future__ import annotations

from pathlib import Path


def cri_log_lines(path: Path) -> list[str]:
    """The container's output lines from a CRI log file (``<time> <stream> <P|F> <text>``;
    partial ``P`` records joined to the line they start)."""
    try:
        raw = path.read_text(errors="replace")
    except FileNotFoundError:
        return []
    lines: list[str] = []
    partial = ""
    for record in raw.splitlines():
        parts = record.split(" ", 3)
        if len(parts) < 3:
            continue
        text = parts[3] if len(parts) == 4 else ""
        if parts[2] == "P":
            partial += text
            continue
        lines.append(partial + text)
        partial = ""
    return lines
