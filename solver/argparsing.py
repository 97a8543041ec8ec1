"""The command line's parser pieces, shared by every command that parses its own arguments: the usage error (one
line, exit 2), the parser that raises it instead of exiting, and the help formatter that shows true defaults.

They sit below :mod:`lyra_solver.cli` so that the commands it dispatches to (``bench``, ``serve``) use them
without importing the command line itself.
"""
from __future__ import annotations

import argparse

__all__ = ["UsageError", "_Help", "_Parser"]


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
