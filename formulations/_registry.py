"""Dispatch by method name, shared by the front doors (``solve_mckp``, ``solve_reclaim``, ``solve_placement``,
``solve_joint``): the checks every front door does once before calling a method.

A registry maps a method name to ``(module, function)`` or ``(module, function, fixed keyword arguments)``
under the front door's package; modules are imported on first use, so a backend's library is loaded only
when its method runs.
"""
from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Registry", "check_time_limit", "resolve"]

Registry = Mapping[str, tuple[str, str] | tuple[str, str, dict[str, Any]]]


def check_time_limit(time_limit: float | None) -> None:
    """Refuse a negative or NaN time limit (``ValueError`` naming ``time_limit``)."""
    if time_limit is not None and not (time_limit >= 0):
        raise ValueError(f"time_limit: must be >= 0 seconds, got {time_limit!r}")


def resolve(package: str, registry: Registry, method: str, options: Mapping[str, Any], *,
            names: tuple[str, ...] | None = None, aliases: Mapping[str, str] | None = None) -> Callable[..., Any]:
    """The function of ``method`` with its fixed arguments, after checking the name and the options.

    Parameters
    ----------
    package : str
        The front door's package (``__name__``); registry modules are relative to it.
    registry : Registry
    method : str
        The name asked for; ``aliases`` maps other accepted names to registry names.
    options : mapping
        The extra keyword arguments given; each must be a keyword-only parameter of the function (other
        than ``time_limit`` and the fixed ones).
    names : tuple of str, optional
        Every accepted name, in the order an error message lists them (default: the registry's).

    Raises
    ------
    ValueError
        ``method: unknown method ...`` or ``<option>: not an option of method ...``.

    Examples
    --------
    >>> resolve("lyra_solver.formulations.reclaim", {"cpsat": ("ilp", "solve_ilp", {"backend": "cpsat"})},
    ...         "cpsat", {"threads": 2})
    Traceback (most recent call last):
    ...
    ValueError: threads: not an option of method 'cpsat' (its options: num_workers, deterministic)
    """
    aliases = aliases or {}
    names = tuple(registry) if names is None else names
    if method not in names:
        raise ValueError(f"method: unknown method {method!r}; expected one of {', '.join(names)}")
    entry = registry[aliases.get(method, method)]
    module, name = entry[0], entry[1]
    fixed: dict[str, Any] = entry[2] if len(entry) > 2 else {}  # type: ignore[misc]
    function = getattr(importlib.import_module(f"{package}.{module}"), name)
    if options:
        accepted = _options_of(function, tuple(fixed))
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ValueError(f"{unknown[0]}: not an option of method {method!r} (its options: "
                             f"{', '.join(accepted) or 'none'})")
    return functools.partial(function, **fixed) if fixed else function


@functools.lru_cache(maxsize=256)
def _options_of(function: Callable[..., Any], fixed: tuple[str, ...]) -> tuple[str, ...]:
    """The keyword-only options of a method's function (``time_limit`` and the fixed ones left out), read from
    its signature once per function (only when options are given: a call without options has none to check)."""
    return tuple(p.name for p in inspect.signature(function).parameters.values()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "time_limit" and p.name not in fixed)
