"""Turning unreadable or invalid input files into one ``error:`` line and exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Final, NoReturn, TypeVar

import click

EXIT_BAD_INPUT: Final = 2

T = TypeVar("T")


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit with code 2."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def read_input(path: str, reader: Callable[[str], T],
               invalid: tuple[type[Exception], ...]) -> T:
    """Return ``reader(path)``; an ``invalid`` error (whose message already names the file and
    entry), an unreadable file or a file that is not UTF-8 ends the command via :func:`fail`."""
    try:
        return reader(path)
    except invalid as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{path}: cannot be read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"{path}: is not UTF-8 text: {exc.reason} at byte {exc.start}")
