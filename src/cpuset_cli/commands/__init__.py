"""One module per operator command; ``cpuset_cli.main`` registers them."""
