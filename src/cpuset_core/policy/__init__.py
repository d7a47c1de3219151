"""Allocation policies: exclusive takes, the shared pool, reassignment and memory nodes."""
