"""The one progress rule of the command line, over tqdm.

A bar goes to standard error when it is a terminal; when standard error is not a terminal (a log file, a pipe, a
test) there is none unless ``--progress`` asks for it; ``--no-progress`` and ``-q`` turn it off everywhere. Every
command (``generate``, ``bench``, ``simulate``) decides through :func:`wanted` and draws through :func:`bar`.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["bar", "wanted"]


def wanted(args: Any = None, *, quiet: bool | None = None, progress: bool | None = None, stream=None) -> bool:
    """Whether a command shows a progress bar.

    Parameters
    ----------
    args : argparse.Namespace, optional
        Read for ``quiet`` (``-q``) and ``progress`` (``--progress``: True, ``--no-progress``: False, neither:
        None) where the keywords are not given.
    quiet, progress : bool, optional
        As above; ``quiet`` wins over ``progress``.
    stream : file, optional
        Where the bar would go (default standard error).

    Returns
    -------
    bool
        False under ``-q`` or ``--no-progress``; True under ``--progress``; else whether ``stream`` is a terminal.

    Running time O(1).
    """
    if quiet is None:
        quiet = bool(getattr(args, "quiet", False))
    if progress is None:
        progress = getattr(args, "progress", None)
    if quiet:
        return False
    if progress is not None:
        return bool(progress)
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or odd stream: no bar
        return False


@contextlib.contextmanager
def bar(total: int, desc: str, unit: str, *, enabled: bool) -> Iterator[Any]:
    """A tqdm bar of ``total`` steps on standard error, or None when not ``enabled`` (or tqdm is missing).

    ``enabled`` is the answer of :func:`wanted`; the bar is drawn even when standard error is not a terminal
    (that is what ``--progress`` asks for), and removed when the block ends.
    """
    if not enabled:
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        yield None
        return
    b = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, disable=False, mininterval=0.5)
    try:
        yield b
    finally:
        b.close()
