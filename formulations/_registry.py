"""Dispatch by method name, shared by the front doors (``solve_mckp``, ``solve_reclaim``, ``solve_placement``,
``solve_joint``, ``solve_packing``): the checks every front door does once before calling a method.

A registry maps a method name to ``(module, function)`` or ``(module, function, fixed keyword arguments)``, from
the family's method table (:meth:`lyra_solver.formulations.methods.MethodTable.registry`). A module without a dot
is under the front door's package: one of the door's *own* methods, which may assume what the door checked and
answered before dispatch. A dotted module is absolute: a heuristic of :mod:`lyra_solver.heuristics`, a
self-contained public function that answers every instance itself (see :func:`own`).

Modules are imported by name when their method runs (:func:`importlib.import_module`; after the first call a
lookup in ``sys.modules``), so a backend's library is loaded only when its method runs, and a heuristic's row is
data until then: ``formulations`` imports no other folder of the project, yet its front doors run the heuristics
of ``lyra_solver.heuristics`` (which import ``formulations``, never the reverse, so no import cycle is possible).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Registry", "check_time_limit", "own", "resolve"]

Registry = Mapping[str, tuple[str, str] | tuple[str, str, dict[str, Any]]]


def check_time_limit(time_limit: float | None) -> None:
    """Refuse a negative or NaN time limit (``ValueError`` naming ``time_limit``)."""
    if time_limit is not None and not (time_limit >= 0):
        raise ValueError(f"time_limit: must be >= 0 seconds, got {time_limit!r}")


def own(registry: Registry) -> frozenset[str]:
    """The names of ``registry`` that are the front door's own methods (a module under its package).

    The door answers the trivial cases (nothing to do, provably infeasible) before it calls one of them, so such a
    method holds only its algorithm. The others, the heuristics of :mod:`lyra_solver.heuristics`, are public
    functions that the benchmarks and users also call directly: the door checks the arguments and hands them every
    instance, and they answer the trivial ones themselves, the same answer whether called through the door or
    directly (best fit decreasing places what fits where a job fits nowhere, which the door's ``infeasible`` would
    not say; the reclaim heuristics report returning every server as their own status rule has it).
    """
    return frozenset(name for name, entry in registry.items() if "." not in entry[0])


def resolve(package: str, registry: Registry, method: str, options: Mapping[str, Any], *,
            names: tuple[str, ...] | None = None, aliases: Mapping[str, str] | None = None) -> Callable[..., Any]:
    """The function of ``method`` with its fixed arguments, after checking the name and the options.

    The function returned takes ``(problem, *, time_limit, **options)`` whatever the method: a method without a
    ``time_limit`` parameter (a heuristic, which runs to its end in polynomial time) is called without it.

    Parameters
    ----------
    package : str
        The front door's package (``__name__``); registry modules without a dot are relative to it.
    registry : Registry
    method : str
        The name asked for; ``aliases`` maps other accepted names to registry names.
    options : mapping
        The extra keyword arguments given; each must be a parameter of the function that may be given by keyword
        (other than the problem, ``time_limit`` and the fixed ones).
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
    path = module if "." in module else f"{package}.{module}"
    loaded = sys.modules.get(path)  # what import_module would return, without its import machinery (a warm call)
    function = getattr(loaded if loaded is not None else importlib.import_module(path), name)
    accepted, timed = _parameters_of(function, tuple(fixed))
    if options:
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ValueError(f"{unknown[0]}: not an option of method {method!r} (its options: "
                             f"{', '.join(accepted) or 'none'})")
    bound = functools.partial(function, **fixed) if fixed else function
    return bound if timed else functools.partial(_untimed, bound)


def _untimed(function: Callable[..., Any], problem: Any, *, time_limit: float | None = None,
             **options: Any) -> Any:
    """Call a method that takes no time limit (it runs to its end): ``time_limit`` is not passed on."""
    return function(problem, **options)


@functools.lru_cache(maxsize=256)
def _parameters_of(function: Callable[..., Any], fixed: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The options of a method's function (the parameters after the problem that may be given by keyword, less
    ``time_limit`` and the fixed ones) and whether it takes ``time_limit``, read from its signature once."""
    params = list(inspect.signature(function).parameters.values())[1:]
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return (tuple(p.name for p in params if p.kind in keyword and p.name != "time_limit" and p.name not in fixed),
            any(p.name == "time_limit" for p in params))
