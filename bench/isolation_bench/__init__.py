"""The isolation benchmark's parts; ``bench/isolation.py`` runs them (its docstring describes the
benchmark: the probe, the neighbours, the cases and the table)."""
