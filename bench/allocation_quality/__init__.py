"""The allocation-quality benchmark's parts; ``bench/quality.py`` runs them (its docstring
describes the benchmark: the two policies, the traces, the machines and the targets)."""
