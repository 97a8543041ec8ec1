"""Where the real data sets are (Philly, Alibaba, Pollux: ``shared/data/README.md`` of the repository's parent).

The first that applies:

1. ``--data-dir DIR`` of ``bench`` and ``simulate`` (the command line sets :data:`ENV` from it, so that worker
   processes see the same folder);
2. the environment variable ``LYRA_SOLVER_DATA``;
3. ``../shared/data`` beside the repository root, for a source checkout (the root being the folder with
   ``pyproject.toml`` that holds this package's ``bench`` folder).

An installed wheel has no repository: without 1 or 2 it has no data, and the suites that need data skip those
instances (they say which). A folder named by 1 or 2 that does not exist is bad input, named by its flag or
variable (:class:`~lyra_solver.errors.InputError`): a typo never silently skips the real data.
"""
from __future__ import annotations

import os
from pathlib import Path

from lyra_solver.errors import InputError

__all__ = ["ENV", "data_root", "missing_data", "set_data_dir", "shared_data"]

#: The environment variable naming the data folder.
ENV = "LYRA_SOLVER_DATA"

#: Every data file asked for in this process (relative to the data folder), in order: :func:`missing_data`.
_ASKED: dict[str, None] = {}


def _repository_default() -> Path | None:
    """``../shared/data`` beside the source checkout this module runs from, if it is one."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "bench").is_dir():
        return root.parent / "shared" / "data"
    return None


def set_data_dir(path: str, flag: str = "--data-dir") -> Path:
    """Use ``path`` as the data folder for this process and its workers (``--data-dir``); checks it exists.

    Raises
    ------
    InputError
        Naming ``flag`` when ``path`` is empty or not a folder.
    """
    if not path or not Path(path).is_dir():
        raise InputError(flag, f"{path!r} is not a folder (the folder of the data sets: philly/, alibaba/, pollux/)")
    os.environ[ENV] = str(Path(path).resolve())
    return Path(os.environ[ENV])


def data_root() -> Path | None:
    """The data folder (see the module's docstring), or None when there is none.

    Raises
    ------
    InputError
        Naming ``LYRA_SOLVER_DATA`` when it is set to something that is not a folder.
    """
    env = os.environ.get(ENV)
    if env is not None:
        if not env or not Path(env).is_dir():
            raise InputError(ENV, f"{env!r} is not a folder (set it to the folder of the data sets, or unset it)")
        return Path(env)
    default = _repository_default()
    return default if default is not None and default.is_dir() else None


def shared_data(*parts: str) -> Path:
    """Path of ``<data folder>/<parts...>``; callers check ``exists()`` and skip what is missing.

    Without any data folder the path is relative (``shared-data-not-found/...``), so that it never exists and
    error lines show no machine path. Raises :class:`~lyra_solver.errors.InputError` as :func:`data_root` does.
    """
    root = data_root()
    if parts:
        _ASKED.setdefault("/".join(parts), None)
    return (root if root is not None else Path("shared-data-not-found")).joinpath(*parts)


def missing_data() -> list[str]:
    """The data files asked for in this process (:func:`shared_data`) that do not exist: the instances built on
    them were skipped. Relative to the data folder, in the order first asked."""
    root = data_root()
    return [rel for rel in _ASKED if root is None or not (root / rel).exists()]
