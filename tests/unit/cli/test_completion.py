"""Shell completion is click's own and completes the registered commands."""

from __future__ import annotations

from click.testing import CliRunner

from cpuset_cli.main import cli


def test_bash_completion_completes_command_names() -> None:
    result = CliRunner().invoke(cli, [], prog_name="nri-cpuset", env={
        "_NRI_CPUSET_COMPLETE": "bash_complete", "COMP_WORDS": "nri-cpuset ch",
        "COMP_CWORD": "1"})
    assert result.exit_code == 0
    assert "plain,check-annotation" in result.output


def test_every_command_has_an_example_in_its_help() -> None:
    for name in cli.list_commands(None):  # type: ignore[arg-type]
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Example" in result.output, name
