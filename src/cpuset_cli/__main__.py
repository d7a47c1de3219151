"""``python -m cpuset_cli`` runs the ``nri-cpuset`` command."""

from cpuset_cli.main import cli

cli()
