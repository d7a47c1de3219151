"""Reading the plugin's log as the lab needs it: events by name, in console or JSON lines.

Placements are read from the kernel, never from here; the log only tells when the plugin has
reached a point (synchronized) and how often it did something (a release).
"""

from __future__ import annotations

import json


def events(text: str, name: str) -> list[dict[str, object]]:
    """Every ``name`` event in ``text``, as its fields. A console line is ``<time> <LEVEL>
    <logger>: <event> key=value ...`` (values without spaces are all the lab needs); a JSON
    line is an object with ``event``."""
    found: list[dict[str, object]] = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:  # a line cut by a concurrent write
                continue
            if isinstance(record, dict) and record.get("event") == name:
                found.append(record)
            continue
        _, sep, rest = line.partition(f": {name} ")
        if sep and "=" in rest.split(" ", 1)[0]:
            fields: dict[str, object] = {}
            for word in rest.split(" "):
                key, eq, value = word.partition("=")
                if eq:
                    fields[key] = value
            found.append(fields)
        elif line.endswith(f": {name}"):
            found.append({})
    return found


def synchronized(text: str) -> int:
    """How many rebuilds (Synchronize or CRI inventory) the log shows."""
    return len(events(text, "synchronized"))
