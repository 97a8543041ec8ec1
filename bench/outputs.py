"""Output paths of the commands that write folders (``bench --out``, ``simulate --out``) or reports
(``bench --report``): checked before any work, written through unique temporary files.

:func:`check_out_dir` refuses, with :class:`~lyra_solver.errors.InputError` naming the flag, an empty path, a path
that is a file (or under one), a folder that cannot be created or written, and an existing folder that is not
empty unless ``force`` (then the files an earlier run of the same command wrote there are removed first, so that
no stale file sits beside the new ones). :func:`check_out_file` does the same for a single file.
:func:`write_file` writes through a temporary name made exclusively (``O_EXCL``) in the target's own folder and
renamed over the target: a link planted in the folder is never followed, and a reader never sees half a file.
"""
from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
import tempfile
from pathlib import Path

from lyra_solver.errors import InputError

__all__ = ["check_out_dir", "check_out_file", "write_file"]


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _creatable(path: Path, flag: str, what: str) -> None:
    """``path`` does not exist: its nearest existing ancestor must be a writable folder."""
    anc = _nearest_existing(path)
    if not anc.is_dir():
        raise InputError(flag, f"cannot create {what} {str(path)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(flag, f"cannot create {what} {str(path)!r}: folder {str(anc)!r} is not writable")


def check_out_dir(path: str | os.PathLike | None, flag: str = "--out", *, force: bool = False,
                  patterns: tuple[str, ...] = ()) -> Path | None:
    """Check an output folder before any work; returns it as a :class:`Path` (None when ``path`` is None).

    Parameters
    ----------
    path : str or path-like, optional
        The folder a command will write into (created with its parents when missing).
    flag : str
        The option that named it, for the error line.
    force : bool
        Accept an existing folder that is not empty: the files of ``patterns`` in it are removed now.
    patterns : tuple of str
        Shell patterns of the file names the command writes there (e.g. ``"results.json"``, ``"*_time.png"``).

    Raises
    ------
    InputError
        Naming ``flag``: an empty path; a path that exists and is not a folder; a folder that cannot be created
        or is not writable; an existing folder that is not empty, without ``force``.

    Running time O(files in the folder).
    """
    if path is None:
        return None
    text = os.fspath(path)
    if not text.strip():
        raise InputError(flag, "empty path: name the folder to write into")
    p = Path(text)
    if os.path.lexists(p) and not p.is_dir():
        raise InputError(flag, f"{text!r} exists and is not a folder (the outputs are a folder of files)")
    if not p.exists():
        _creatable(p, flag, "folder")
        return p
    if not os.access(p, os.W_OK | os.X_OK):
        raise InputError(flag, f"folder {text!r} is not writable")
    entries = sorted(os.listdir(p))
    if entries and not force:
        count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
        raise InputError(flag, f"folder {text!r} is not empty ({count}): choose a new folder, or "
                               "add --force to replace the outputs of an earlier run there")
    for name in entries:
        if any(fnmatch.fnmatchcase(name, pat) for pat in patterns) or _our_temporary(name):
            full = p / name
            if full.is_symlink() or not full.is_dir():
                try:
                    full.unlink()
                except OSError as err:
                    raise InputError(flag, f"cannot remove the earlier output {str(full)!r}: "
                                           f"{err.strerror or err}") from None
    return p


def _our_temporary(name: str) -> bool:
    """A temporary file left by an interrupted :func:`write_file` (``.NAME.XXXXXXXX.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def check_out_file(path: str | os.PathLike | None, flag: str) -> Path | None:
    """Check an output file before any work; returns it as a :class:`Path` (None when ``path`` is None).

    An existing regular file is accepted (it is replaced whole at the end); an empty path, a folder, a device
    or other special file (``/dev/null``: the report's plots would go beside it), or a file whose folder cannot
    be created or written is refused with :class:`~lyra_solver.errors.InputError` naming ``flag``.
    """
    if path is None:
        return None
    text = os.fspath(path)
    if not text.strip():
        raise InputError(flag, "empty path: name the file to write")
    p = Path(text)
    if p.exists():
        mode = os.stat(p).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(flag, f"{text!r} is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise InputError(flag, f"{text!r} is not a regular file (a device or pipe); name a file to write")
        if not os.access(p.parent if str(p.parent) else ".", os.W_OK | os.X_OK):
            raise InputError(flag, f"folder of {text!r} is not writable")
        return p
    _creatable(p, flag, "file")
    return p


def write_file(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` whole: a unique temporary file created exclusively in the same folder, then
    renamed over ``path`` (a link at ``path`` is replaced, never followed). Returns ``path``.

    Running time O(len(data)).
    """
    p = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600: a new output gets the usual permissions
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p
