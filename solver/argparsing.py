"""The command line's parser pieces, shared by every command that parses its own arguments: the usage error (one
line, exit 2), the parser that raises it instead of exiting, the help formatter that shows true defaults, and the
argument types every command shares (:func:`positive_float`, :func:`nonneg_float`, :func:`int_at_least`).

They sit below :mod:`lyra_solver.cli` so that the commands it dispatches to (``bench``, ``serve``) use them
without importing the command line itself.
"""
from __future__ import annotations

import argparse

__all__ = ["UsageError", "_Help", "_Parser", "int_at_least", "nonneg_float", "positive_float"]


class UsageError(Exception):
    """A bad command line: the message is the one stderr line (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message} (see --help)")


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's true default where it has one: not for flags, not for a default of None or an empty
    list, nor where the help already says it (``default`` in its text)."""

    def _get_help_string(self, action):
        d = action.default
        if (d is None or d is False or d is argparse.SUPPRESS or (isinstance(d, list | tuple) and not d)
                or action.nargs == 0 or "default" in (action.help or "")):
            return action.help
        return super()._get_help_string(action)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_float(text: str) -> float:
    """An argument type: a finite number above 0."""
    x = _float(text)
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return x


def nonneg_float(text: str) -> float:
    """An argument type: a finite number at least 0."""
    x = _float(text)
    if not 0 <= x < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return x


def int_at_least(low: int):
    """An argument type: an integer at least ``low``."""
    def parse(text: str) -> int:
        try:
            x = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if x < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text!r}")
        return x

    return parse
