"""Checked conversions of array arguments for the problem types (shapes, integrality, signs, index ranges).

Every function takes the argument's name and raises ``ValueError`` starting with it (``host_server[3]: ...``),
and returns a new read-only numpy array, so a problem never shares memory with its caller.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["bool_vector", "float_array", "index_vector", "int_vector", "nonnegative_int"]


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _shape(arr: np.ndarray, name: str, ndim: int, length: int | None) -> None:
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected {length} entries, got {arr.shape[0]}")


def _first(mask: np.ndarray) -> str:
    return "".join(f"[{int(i)}]" for i in np.argwhere(mask)[0])


def int_vector(value: Any, name: str, *, length: int | None = None, low: int | None = None) -> np.ndarray:
    """A 1-D int64 copy of ``value``, refusing non-integral entries and entries below ``low``.

    >>> int_vector([1, 2.0], "gpus").tolist()
    [1, 2]
    >>> int_vector([1, -2], "gpus", low=0)
    Traceback (most recent call last):
    ...
    ValueError: gpus[1]: must be >= 0, got -2
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected integers ({exc})") from None
    if raw.dtype == object and raw.size == 0:
        raw = raw.astype(np.int64)
    if raw.size == 0 and raw.dtype.kind == "f":
        raw = raw.astype(np.int64)
    _shape(raw, name, 1, length)
    if raw.dtype.kind == "b":
        raise ValueError(f"{name}: expected integers, got booleans")
    if raw.dtype.kind in "iu":
        arr = raw.astype(np.int64, copy=True)
    else:
        try:
            f = raw.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: expected integers ({exc})") from None
        bad = ~np.isfinite(f) | (f != np.floor(f)) | (np.abs(f) > 2.0**62)
        if bad.any():
            raise ValueError(f"{name}{_first(bad)}: expected an integer, got {f[bad][0]!r}")
        arr = f.astype(np.int64)
    if low is not None and (arr < low).any():
        where = arr < low
        raise ValueError(f"{name}{_first(where)}: must be >= {low}, got {int(arr[where][0])}")
    return _readonly(arr)


def nonnegative_int(value: Any, name: str) -> int:
    """An integer ``>= 0`` (an integral float is accepted; booleans are not).

    >>> nonnegative_int(-1, "count")
    Traceback (most recent call last):
    ...
    ValueError: count: must be >= 0, got -1
    """
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf" or not np.isfinite(arr) or float(arr) != np.floor(float(arr)):
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    number = int(arr)
    if number < 0:
        raise ValueError(f"{name}: must be >= 0, got {number}")
    return number


def index_vector(value: Any, name: str, *, length: int | None, bound: int, of: str) -> np.ndarray:
    """A 1-D int64 copy of ``value`` whose entries index ``of`` (``0 <= x < bound``).

    >>> index_vector([0, 3], "host_job", length=2, bound=3, of="jobs")
    Traceback (most recent call last):
    ...
    ValueError: host_job[1]: 3 is not a valid index into the 3 jobs
    """
    arr = int_vector(value, name, length=length)
    bad = (arr < 0) | (arr >= bound)
    if bad.any():
        raise ValueError(f"{name}{_first(bad)}: {int(arr[bad][0])} is not a valid index into the {bound} {of}")
    return arr


def float_array(value: Any, name: str, *, shape: tuple[int | None, ...], nan: bool = False) -> np.ndarray:
    """A float64 copy of ``value`` with the given shape (``None``: any length), finite unless ``nan``.

    With ``nan=True``, ``nan`` and ``-inf`` are accepted (they mark forbidden options) but ``+inf`` is not.
    """
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected real numbers ({exc})") from None
    if arr.ndim != len(shape) or any(want is not None and got != want
                                     for got, want in zip(arr.shape, shape, strict=True)):
        want_txt = "(" + ", ".join("n" if w is None else str(w) for w in shape) + ")"
        raise ValueError(f"{name}: expected shape {want_txt}, got {arr.shape}")
    bad = (arr == np.inf) if nan else ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name}{_first(bad)}: must be finite, got {arr[bad][0]!r}")
    return _readonly(arr)


def bool_vector(value: Any, name: str, *, length: int | None = None) -> np.ndarray:
    """A 1-D bool copy of ``value``; entries must be booleans or 0/1."""
    raw = np.asarray(value)
    _shape(raw, name, 1, length)
    if raw.dtype.kind != "b" and raw.size and (raw.dtype.kind not in "iuf" or not np.isin(raw, (0, 1)).all()):
        raise ValueError(f"{name}: expected booleans")
    return _readonly(raw.astype(bool, copy=True))
