"""``nri-cpuset simulate``'s output formats (JSON, table, progress) and its real-file inputs (a
topology file and a config file, through the composition root).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cpuset_cli.commands.simulate import simulate
from cpuset_cli.simulate import replay
from cpuset_cli.trace import parse_trace
from cpuset_core import Settings
from tests.unit.cli.simulate_traces import DUAL, EPYC, add, delete, invoke, trace

# -- output formats ----------------------------------------------------------------------------


def test_json_has_one_result_per_add_in_order_and_the_metrics(tmp_path: Path) -> None:
    code, out, err = invoke(tmp_path, trace(add(7, 4), add(8, 2, "0-1"), delete(7),
                                            add(9, 99), add(10, 2)), "-o", "json")
    assert code == 0, err
    document = json.loads(out)
    assert set(document) == {"schema", "results", "metrics"}
    assert document["schema"] == 1
    # 7 takes two whole cores of node 0; the pin on 0-1 moves it; 9 cannot fit.
    assert document["results"] == [
        {"id": 7, "cpus": "0-1,8-9"},
        {"id": 8, "cpus": "0-1"},
        {"id": 9, "error": "insufficient-cpus"},
        {"id": 10, "cpus": document["results"][3]["cpus"]},
    ]
    assert set(document["metrics"]) == {
        "events", "requests", "admitted", "rejected", "threads_per_core", "numa_confined",
        "whole_core", "l3_confined", "split_cores", "failures_with_free_cpus", "decision_ms"}
    assert document["metrics"]["numa_confined"] == {"met": 2, "eligible": 2, "percent": 100.0}
    assert set(document["metrics"]["decision_ms"]) == {"count", "p50", "p99", "max"}
    assert set(document["metrics"]["split_cores"]) == {"time_average", "max"}


def test_the_table_shows_every_add_and_every_metric(tmp_path: Path) -> None:
    code, out, _err = invoke(tmp_path, trace(add(7, 4), add(8, 2, "0-1"), add(9, 99)))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["event", "id", "asks", "cpus", "/", "result"]
    assert lines[1].split() == ["0", "7", "4", "CPUs", "0-1,8-9"]
    assert lines[2].split() == ["1", "8", "pinned", "0-1", "0-1"]
    assert "REJECTED insufficient-cpus: needs 99 exclusive CPU(s)" in lines[3]
    for name in ("NUMA-confined", "L3-confined", "whole-core", "split cores",
                 "failures with free CPUs", "decision time"):
        assert name in out
    assert "p50" in out
    assert "p99" in out
    assert "\x1b[" not in out  # no escape codes when stdout is not a terminal


def test_no_progress_bar_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    events = [add(n, 1) for n in range(50)]
    _code, _out, err = invoke(tmp_path, trace(*events))
    assert err == ""


def test_the_progress_display_replays_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    from cpuset_cli.commands.simulate import _replay_with_progress

    events = parse_trace(trace(add(1, 2), add(2, 3), delete(1)))
    assert _replay_with_progress(DUAL, events, Settings()).results == replay(DUAL, events).results


def test_an_empty_trace_gives_empty_results_and_null_percentages(tmp_path: Path) -> None:
    code, out, _err = invoke(tmp_path, trace(), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["results"] == []
    assert document["metrics"]["numa_confined"]["percent"] is None
    assert document["metrics"]["decision_ms"] == {"count": 0, "p50": None, "p99": None,
                                                  "max": None}
    code, out, _err = invoke(tmp_path, trace())
    assert code == 0
    assert "no decision" in out


# -- on real files, through the composition root -----------------------------------------------


def test_simulate_reads_a_real_topology_file(tmp_path: Path) -> None:
    from cpuset_adapters.topology_file_writer import write_topology

    write_topology(EPYC, tmp_path / "epyc.json")
    (tmp_path / "trace.json").write_text(json.dumps(trace(add(1, 8), add(2, 4, "0-3"))))
    result = CliRunner().invoke(simulate, ["--topology", str(tmp_path / "epyc.json"),
                                           "--trace", str(tmp_path / "trace.json"), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["results"][1] == {"id": 2, "cpus": "0-3"}
    assert document["metrics"]["l3_confined"]["percent"] == 100.0


def test_a_bad_topology_file_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"cpus": {"0": {"socket": 0, "core": 0}}}')
    (tmp_path / "trace.json").write_text(json.dumps(trace()))
    result = CliRunner().invoke(simulate, ["--topology", str(tmp_path / "bad.json"),
                                           "--trace", str(tmp_path / "trace.json")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / 'bad.json'}")
    assert "numa" in result.stderr
    assert "Traceback" not in result.output


def test_config_file_sets_the_allocation_options(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[cpus]\nfull_physical_cores = true\n")
    document = trace(add(1, 3), add(2, 2))
    code, out, _err = invoke(tmp_path, document, "--config", str(config), "-o", "json")
    assert code == 0
    results = json.loads(out)["results"]
    assert results[0]["error"] == "full-cores-unavailable"
    assert results[1]["cpus"] == "0,8"
    code, out, _err = invoke(tmp_path, document, "-o", "json")
    assert json.loads(out)["results"][0]["cpus"] == "0-1,8"


def test_an_invalid_config_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[cpus]\nnuma_spanning = "wide"\n')
    code, _out, err = invoke(tmp_path, trace(add(1, 1)), "--config", str(config))
    assert code == 2
    assert "cpus.numa_spanning" in err
