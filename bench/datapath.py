"""Where the real data sets are: ``../shared/data`` beside the repository root, else ``/work/shared/data``."""
from __future__ import annotations

from pathlib import Path

__all__ = ["shared_data"]

_FALLBACK = Path("/work/shared/data")


def shared_data(*parts: str) -> Path:
    """Path of ``shared/data/<parts...>``: the first of ``<repo>/../shared/data`` (the repository being this
    file's grandparent folder), an ancestor's ``shared/data``, or ``/work/shared/data`` that exists; the
    first candidate when none does (callers check ``exists()`` and skip)."""
    here = Path(__file__).resolve()
    candidates = [here.parents[1].parent / "shared" / "data"]
    candidates += [p / "shared" / "data" for p in here.parents[2:]]
    candidates.append(_FALLBACK)
    for c in candidates:
        if c.is_dir():
            return c.joinpath(*parts)
    return candidates[0].joinpath(*parts)
