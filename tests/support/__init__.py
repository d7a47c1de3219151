"""Test doubles shared by the unit and contract suites."""
