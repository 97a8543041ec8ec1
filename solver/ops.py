"""The command line's operations as bytes in, bytes out: one code path for ``lyra-solver`` and ``lyra-solver serve``.

Each function takes the input documents as bytes and the parsed options (the ``argparse.Namespace`` that the
command line's own parser built, or one built the same way from an HTTP query: :mod:`lyra_solver.serve`), and
returns an :class:`Output`: the exact bytes the command writes on standard output and its exit code. Bad input
raises :class:`~lyra_solver.errors.InputError` naming ``source`` (a file name, ``<stdin>``, or ``None``), the field
path and the problem, which the command line prints as its one error line and the service returns as a 400.

Nothing here reads or writes a file, so both front ends give the same bytes for the same input and options.
"""
from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass
from typing import Any

from lyra_solver import io
from lyra_solver.errors import InputError, escape

__all__ = ["TABLE_IDS", "Output", "apply", "check", "decide", "decision_table", "mckp", "schema"]

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Output:
    """What a command writes: ``data`` on standard output, exit ``code`` (0 done, 1 a check failed or no feasible
    answer), ``note`` a line for standard error beside it (or None), ``media`` the bytes' media type."""

    data: bytes
    code: int = 0
    note: str | None = None
    media: str = JSON


def _parse(data: bytes, parse, source: str | None):
    try:
        return parse(data)
    except InputError as err:
        raise (err.with_source(source) if source else err) from None


def decide(data: bytes, args: Any, source: str | None = None) -> Output:
    """``lyra-solver decide``: the decision for the snapshot ``data`` under the options of ``args``.

    Every attribute of ``args`` named as a keyword argument of :func:`lyra_solver.decide` is passed to it (so an
    option added to the command line's parser and to ``decide`` reaches both front ends); ``args.format`` picks
    the output (``json``, ``pretty`` or ``table``). Running time: that of :func:`lyra_solver.decide`.
    """
    from lyra_solver.pipeline import decide as run_decide

    backend = getattr(args, "backend", "auto")
    if backend not in ("auto", "numpy"):
        from lyra_solver.values import resolve_backend

        try:
            resolve_backend(backend, 0)
        except ValueError as err:
            raise InputError("--backend", str(err).removeprefix("backend: ")) from None  # the flag, not the input
    snap = _parse(data, io.parse_snapshot, source)
    kwargs = {k: getattr(args, k) for k in _decide_keywords(run_decide) if hasattr(args, k)}
    try:
        decision = run_decide(snap, **kwargs)
    except InputError as err:  # a rule of the round on a field of the snapshot (not an option): name the file
        raise (err.with_source(source) if source and err.path.startswith("jobs[") else err) from None
    fmt = getattr(args, "format", "json")
    if fmt == "json":
        return Output(io.encode(decision))
    if fmt == "pretty":
        return Output((json.dumps(json.loads(io.encode(decision)), indent=2, sort_keys=True) + "\n").encode())
    return Output(decision_table(snap, decision).encode(), media=TEXT)


@functools.cache
def _decide_keywords(run_decide) -> tuple[str, ...]:
    """The keyword arguments of :func:`lyra_solver.decide` (read once: ``inspect.signature`` was a tenth of a
    small round's time in a long-running process)."""
    return tuple(k for k in inspect.signature(run_decide).parameters if k != "snapshot")


#: How many ids a line of the decision table lists before it says how many more there are.
TABLE_IDS = 12


def decision_table(snap, decision) -> str:
    """What a decision changes, for a person: servers reclaimed and loaned, jobs started, scaled up or down,
    moved, preempted, and the summary. One row per kind of change: its count and the first ids."""
    before = {j.id: j for j in snap.jobs}
    rows: dict[str, list[str]] = {k: [] for k in ("started", "scaled up", "scaled down", "moved", "preempted",
                                                  "waiting", "kept")}
    for jid, jd in decision.jobs.items():
        old = before[jid].placement
        if jd.action == "wait":
            rows["waiting"].append(jid)
        elif jd.action == "preempt":
            rows["preempted"].append(jid)
        elif old is None:
            rows["started"].append(f"{jid} ({jd.workers})")
        elif jd.workers != sum(old.values()):
            kind = "scaled up" if jd.workers > sum(old.values()) else "scaled down"
            rows[kind].append(f"{jid} ({sum(old.values())}->{jd.workers})")
        elif jd.changed:
            rows["moved"].append(jid)
        else:
            rows["kept"].append(jid)
    table = [("servers reclaimed", decision.servers.reclaim), ("servers loaned", decision.servers.loan)]
    table += [(f"jobs {k}", v) for k, v in rows.items()]
    width = max(len(k) for k, _ in table)
    lines = [f"{'change':<{width}}  {'count':>6}  ids", f"{'-' * width}  {'-' * 6}  {'-' * 3}"]
    for name, ids in table:
        shown = ", ".join(ids[:TABLE_IDS]) + (f", ... ({len(ids) - TABLE_IDS} more)" if len(ids) > TABLE_IDS else "")
        lines.append(f"{name:<{width}}  {len(ids):>6}  {shown}")
    s = decision.summary
    lines.append("")
    lines.append(f"JCT reduction {s.jct_reduction:g} s, {s.preemptions} preemption(s)"
                 + (f", allocation gap {s.optimality_gap:g}" if s.optimality_gap is not None else "")
                 + (f", {s.time_s:g} s" if s.time_s is not None else ""))
    for step, method in s.methods.items():
        lines.append(f"{step:<12} {method} ({s.statuses.get(step, '')})")
    return "\n".join(escape(line.rstrip()) for line in lines) + "\n"


def _decision_document(dec_bytes: bytes, source: str | None) -> None:
    """Refuse a decision document that is not JSON or repeats a key (bad input, not a broken rule), worded as
    ``decide`` words a snapshot that is not JSON."""
    from lyra_solver.validate import decode

    try:
        decode(dec_bytes, Any)  # a repeated key would be merged silently: bad input too
    except InputError as err:
        raise (err.with_source(source) if source else err) from None


def _not_a_decision(violations, source: str | None) -> None:
    """A document that is not a decision at all (e.g. a snapshot given twice): bad input naming its first field."""
    malformed = [v for v in violations if v.rule == "malformed"]
    if malformed:
        v = malformed[0]
        more = f" (and {len(malformed) - 1} more malformed field(s))" if len(malformed) > 1 else ""
        raise InputError(v.where, f"not a decision: {v.message}{more}", source)


def check(snap_bytes: bytes, dec_bytes: bytes, snap_source: str | None = None,
          dec_source: str | None = None) -> Output:
    """``lyra-solver check``: ``ok: ...`` (exit 0) or the broken rules, one per line (exit 1, with the count as
    ``note``); a document that is not a decision is :class:`InputError` (exit 2). Running time: that of
    :func:`lyra_solver.check_decision_text`."""
    from lyra_solver.check import check_decision_text, format_violations

    _parse(snap_bytes, io.parse_snapshot, snap_source)
    _decision_document(dec_bytes, dec_source)
    violations = check_decision_text(json.loads(snap_bytes), dec_bytes)
    _not_a_decision(violations, dec_source)  # exit 2, not a broken rule
    if violations:
        return Output((format_violations(violations) + "\n").encode(), 1, f"{len(violations)} rule(s) broken",
                      media=TEXT)
    return Output(b"ok: the decision keeps every rule\n", media=TEXT)


def apply(snap_bytes: bytes, dec_bytes: bytes, snap_source: str | None = None,
          dec_source: str | None = None) -> Output:
    """The next round's snapshot once the decision is carried out (:func:`lyra_solver.apply_decision`), canonical
    JSON. A decision that breaks a rule of :func:`lyra_solver.check_decision` is refused (bad input naming the first
    broken rule): applying it would give a snapshot that no round could have produced. Running time: that of the
    check, then O(servers + jobs + placement entries)."""
    from lyra_solver.apply import apply_decision
    from lyra_solver.check import check_decision_text

    snap = _parse(snap_bytes, io.parse_snapshot, snap_source)
    _decision_document(dec_bytes, dec_source)
    violations = check_decision_text(json.loads(snap_bytes), dec_bytes)
    if violations:
        v = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise InputError(v.where or "$", f"breaks rule {v.rule}: {v.message}{more}", dec_source)
    decision = _parse(dec_bytes, io.parse_decision, dec_source)
    return Output(io.encode(apply_decision(snap, decision)))


def mckp(data: bytes, args: Any, source: str | None = None) -> Output:
    """``lyra-solver mckp``: the answer for the MCKP instance ``data`` (``args.method``, ``args.time_limit``,
    ``args.timings``); exit 1 when no feasible choice was found. Running time: that of the method."""
    from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
    from lyra_solver.types import MCKPAnswer

    inst = _parse(data, io.parse_mckp, source)
    try:
        problem = MCKPProblem.from_ragged([c.weights for c in inst.classes], [c.values for c in inst.classes],
                                          inst.capacity)
    except ValueError as err:  # e.g. weights whose sums overflow int64
        raise InputError("classes", str(err), source) from None
    try:
        res = solve_mckp(problem, method=args.method, time_limit=args.time_limit)
    except ValueError as err:  # e.g. the dense DP refusing a huge capacity
        raise InputError("$", f"method {args.method}: {err}", source) from None
    answer = MCKPAnswer(status=str(res.status), objective=res.objective, bound=res.bound, gap=res.gap,
                        choice=None if res.choice is None else list(res.choice), method=res.method,
                        time_s=round(res.time_s, 6) if args.timings else None)
    return Output(io.encode(answer), 0 if res.choice is not None else 1)


def schema(name: str) -> Output:
    """``lyra-solver schema NAME``: the JSON Schema, indented, keys sorted."""
    from lyra_solver.types import json_schema

    return Output((json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n").encode())
