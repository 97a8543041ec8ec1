"""The logging set-up every command shares: how ``-q``/``-v``/``-vv`` become levels, and one line per record on
standard error, ``PREFIX: LEVEL: message``.

The project's loggers (``lyra_solver.*``) get the level asked; other libraries' records show only from warnings on
(their debug lines are noise). Used by the command line (:mod:`lyra_solver.cli`), the benchmark harness, the
fuzzer, the GPU check, and the service (whose records are JSON lines: :mod:`lyra_solver.serve.logs` takes the
level from here and writes its own handler).
"""
from __future__ import annotations

import logging
from typing import Any

__all__ = ["configure_logging", "level_of", "verbosity_of"]


def verbosity_of(args: Any) -> int:
    """``-1`` for ``-q``/``--quiet``, else the count of ``-v`` (0 when neither was given)."""
    return -1 if getattr(args, "quiet", False) else getattr(args, "verbose", 0) or 0


def level_of(verbosity: int) -> int:
    """The project loggers' level for a verbosity: errors only (-1), warnings (0), info (1), debug (2 and more)."""
    return {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)


def configure_logging(prefix: str, verbosity: int = 0, *, levels: bool = True) -> None:
    """One stderr line per record, ``PREFIX: LEVEL: message`` (``PREFIX: message`` without ``levels``); the
    project's loggers at :func:`level_of` ``verbosity``, every other logger from warnings on.

    Like :func:`logging.basicConfig`, it does nothing to a root logger that has handlers already.
    """
    level = level_of(verbosity)
    fmt = f"{prefix}: %(levelname)s: %(message)s" if levels else f"{prefix}: %(message)s"
    logging.basicConfig(level=max(level, logging.WARNING), format=fmt)
    logging.getLogger("lyra_solver").setLevel(level)
