"""Thinning an MCKP whose classes have too many items: an evenly spaced grid of items per wide class, then zoom
windows around the chosen item (an approximation scheme; the caller proves its bound over every item).

The classes here are option ranges ``min..max`` of integer counts (a job's worker counts in the scale step).
:func:`thin_steps` gives each class the grid step that keeps ``classes x items`` within a cell budget;
:func:`zoom_window` the finer window one refinement round gives a class around its chosen count. Both are plain
integer arithmetic on the ranges; building the items' values on a grid is the caller's.

Running time: O(n) for n classes (:func:`thin_steps`), O(1) per class and round (:func:`zoom_window`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["thin_steps", "zoom_window"]


def thin_steps(widths: np.ndarray, max_cells: int) -> list[int] | None:
    """Grid step of each class (``widths[i]`` items: ``max - min + 1``) so that the table fits ``max_cells``.

    ``None`` when nothing needs thinning (no class wider than one item, or ``classes with more than one item x
    widest`` within ``max_cells``). Otherwise every class wider than ``cap = max(max_cells // wide classes, 3)``
    gets step ``ceil((width - 1) / (cap - 2))`` (so ``cap - 2`` steps span the range, with room for min, max and
    one anchored count); the others keep step 1.

    >>> thin_steps(np.array([1, 5, 5]), 100) is None
    True
    >>> thin_steps(np.array([1, 1001, 11]), 20)
    [1, 125, 2]
    """
    widths = np.asarray(widths, dtype=np.int64)
    elastic = int((widths > 1).sum())
    if elastic == 0 or elastic * int(widths.max()) <= max_cells:
        return None
    cap = max(max_cells // elastic, 3)
    return [-(-(w - 1) // (cap - 2)) if w > cap else 1 for w in widths.tolist()]


def zoom_window(lo: int, hi: int, chosen: int, step: int, per_class: int) -> tuple[int, int, int]:
    """One zoom round of a class on a grid of ``step`` over ``lo..hi`` whose chosen count is ``chosen``:
    ``(new lo, new hi, new step)``. The step at least halves; the window spans at most one old step either side
    of ``chosen`` and holds at most ``per_class`` grid points.

    >>> zoom_window(1, 1000, 500, 100, 11)
    (400, 600, 20)
    """
    fine = max(1, min(-(-step // 2), -(-2 * step // (per_class - 1))))
    half = min(step, fine * ((per_class - 1) // 2))
    return max(lo, chosen - half), min(hi, chosen + half), fine
