"""cpuset_cli: the ``nri-cpuset`` command and the composition root."""
