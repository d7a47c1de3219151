"""docs/allocation.md's worked example is what the engine does, column by column."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_core import AdmissionError, AllocationOptions, CpusetEngine, Settings, Spanning
from cpuset_lab.machines import EPYC_LIKE, build_topology
from tests.builders.facts import container, pod

DOC = Path(__file__).resolve().parents[3] / "docs" / "allocation.md"
COLUMNS = {
    "default": Settings(),
    "`numa_spanning = spread`":
        Settings(allocation=AllocationOptions(numa_spanning=Spanning.SPREAD)),
    "`full_physical_cores`": Settings(allocation=AllocationOptions(full_physical_cores=True)),
}


def _table() -> tuple[list[str], list[list[str]]]:
    text = DOC.read_text()
    start = text.index("### Worked example")
    section = text[start:text.index("\n## ", start)]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in lines[1:] if not line.startswith("|---")]
    return header, rows


@pytest.mark.parametrize("column", list(COLUMNS))
def test_worked_example_column_matches_the_engine(column: str) -> None:
    header, rows = _table()
    assert header[0] == "request"
    index = header.index(column)
    engine = CpusetEngine(build_topology(EPYC_LIKE), COLUMNS[column])
    for number, row in enumerate(rows):
        p = pod(f"r{number}")
        try:
            plan = engine.plan_create(p, container(f"c{number}", p, cpu_limit=int(row[0])))
        except AdmissionError:
            assert row[index].startswith("refused"), (column, row)
            continue
        engine.commit(plan)
        assert plan.placement is not None
        assert row[index] == f"`{plan.placement.cpus.format()}`", (column, row)
