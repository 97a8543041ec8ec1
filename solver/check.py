"""Independent decision checker.

Recomputes, from the snapshot and the decision alone, whether a decision obeys the contract of
DESIGN "Formats" (format_version 1) and the rules that follow from "The model". It is written apart
from the engine's pipeline on purpose: it imports nothing else from the project, so a bug in the
engine cannot hide itself here.

Public API
----------
- :class:`Violation`: one broken rule (``rule`` id, ``where`` field path, ``message``).
- :func:`check_decision`: all violations of a decision (empty list = valid).
- :func:`check_decision_text`: the same from the decision's JSON text, which also catches duplicate
  keys (``json.loads`` keeps only the last one) and text that is not JSON.
- :func:`format_violations`: one line per violation, ``RULE at WHERE: MESSAGE``.

Rule ids
--------
``malformed``, ``duplicate-key``, ``format-version``, ``job-missing``, ``job-unknown``,
``job-duplicated``, ``action-unknown``, ``workers-invalid``, ``workers-out-of-range``,
``placement-workers-invalid``, ``placement-sum``, ``placement-unknown-server``,
``placement-serving-server``, ``placement-reclaimed-server``, ``placement-idle-not-loaned``,
``placement-not-run``, ``server-overcommitted``, ``wait-on-running``, ``preempt-on-queued``,
``reclaim-count``, ``reclaim-duplicate``, ``reclaim-unknown-server``, ``reclaim-not-loaned``,
``reclaim-hosts-worker``, ``loan-duplicate``, ``loan-unknown-server``, ``loan-not-idle``,
``loan-reclaimed``, ``loan-unused``, ``changed-wrong``, ``packing-unknown-server``,
``packing-server-unusable``, ``packing-gpus-out-of-range``, ``packing-jobs``,
``packing-job-not-running``, ``packing-insufficient-gpus``, ``packing-share-invalid``,
``packing-direction``, ``summary-preemptions``.

Complexity: ``O(S + J + P + sum of placement sizes)`` for ``S`` servers, ``J`` jobs, ``P`` packing
entries (dictionary look-ups only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["Violation", "check_decision", "check_decision_text", "format_violations"]

ACTIONS = ("run", "wait", "preempt")


@dataclass(frozen=True)
class Violation:
    """One broken rule of a decision.

    Attributes
    ----------
    rule : str
        Short stable rule id, e.g. ``"job-missing"`` or ``"server-overcommitted"``.
    where : str
        Field path in the decision, e.g. ``"jobs.a.placement.t0"``, ``"servers.reclaim[1]"``;
        ``"$"`` is the whole decision.
    message : str
        One human-readable line.
    """

    rule: str
    where: str
    message: str


def format_violations(violations: Iterable[Violation]) -> str:
    """Render violations one per line as ``RULE at WHERE: MESSAGE``.

    Parameters
    ----------
    violations : iterable of Violation
        As returned by :func:`check_decision`.

    Returns
    -------
    str
        The lines joined by ``"\\n"`` (no trailing newline); empty string for no violation. Ids come from the
        input: each part is escaped (a newline, carriage return or terminal code becomes ``\\n``, ``\\r``,
        ``\\x1b``), so a hostile id can neither start a line of its own nor draw on the terminal, and cut to
        :data:`MAX_PART` characters with an ellipsis.
    """
    return "\n".join(f"{_safe(v.rule)} at {_safe(v.where)}: {_safe(v.message)}" for v in violations)


#: Longest part (rule, where, message) of a printed violation, in characters after escaping.
MAX_PART = 400


def _safe(text: str) -> str:
    """``text`` on one line without control characters (``repr``-style escapes), at most :data:`MAX_PART`
    characters: a longer one keeps its start and end around ``...``."""
    text = str(text)
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
    if len(text) > MAX_PART:
        keep = (MAX_PART - 3) // 2
        text = f"{text[:keep]}...{text[-keep:]}"
    return text


def _is_int(value: Any) -> bool:
    """True for a JSON integer (a Python ``int`` that is not a ``bool``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """True for a finite JSON number (int or float, not bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _short(value: Any, limit: int = 60) -> str:
    """A short ``repr`` of a value for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------- facts
@dataclass(frozen=True, eq=False)
class Facts:
    """What the snapshot and the decision say, read once and tolerantly, before any rule is checked.

    Every rule function reads these facts and returns its violations; none of them changes the facts. Entries
    that are structurally broken are left out of the derived views (``reclaim``, ``loan``, ``run_placements``,
    ``packing_pairs``) and reported by the rules that read the raw parts.

    Attributes
    ----------
    snapshot : dict
        The snapshot (``{}`` if it is not an object).
    decision : dict or None
        The decision, ``None`` when it is not a JSON object.
    servers, jobs : dict
        Snapshot servers and jobs by id (first of duplicates).
    job_entries : dict
        ``decision.jobs`` when it is an object, else ``{}``.
    reclaim, loan : list of (index, server id)
        String entries of ``servers.reclaim`` / ``servers.loan``.
    reclaim_set, loan_set : set of str
        Distinct ids among them.
    run_placements : dict
        Job id -> {server id: workers} of ``run`` entries (known servers, positive integer counts only).
    run_gpus : dict
        Job id -> GPUs of the job in the decision (workers, or the placement's sum when workers is not an
        integer, times ``gpus_per_worker``).
    packing_pairs : list of (index, server id, gpus, [job, job])
        Packing entries whose server, positive GPUs and two distinct job ids are well formed.
    """

    snapshot: dict
    decision: dict | None
    servers: dict[str, dict]
    jobs: dict[str, dict]
    job_entries: dict
    reclaim: list[tuple[int, str]]
    loan: list[tuple[int, str]]
    reclaim_set: set[str]
    loan_set: set[str]
    run_placements: dict[str, dict[str, int]]
    run_gpus: dict[str, int]
    packing_pairs: list[tuple[int, str, int, list[str]]]

    def pool(self, server_id: str) -> str | None:
        """Pool of a snapshot server, ``None`` if unknown."""
        server = self.servers.get(server_id)
        return server.get("pool") if server else None

    def state(self, server_id: str) -> str | None:
        """State of a snapshot inference server (``None`` for training or unknown servers)."""
        server = self.servers.get(server_id)
        if not server or server.get("pool") != "inference":
            return None
        return server.get("state")

    def gpus(self, server_id: str) -> int:
        """GPUs of a snapshot server (0 if unknown)."""
        server = self.servers.get(server_id)
        value = server.get("gpus") if server else 0
        return value if _is_int(value) else 0

    def gpu_mem(self, server_id: str) -> float:
        """GPU memory (GB) of each GPU of a snapshot server (default 80)."""
        server = self.servers.get(server_id) or {}
        value = server.get("gpu_mem_gb", 80)
        return float(value) if _is_number(value) else 80.0

    def usable(self, server_id: str) -> bool:
        """Whether training may use the server in this decision."""
        pool = self.pool(server_id)
        if pool == "training":
            return True
        if pool != "inference":
            return False
        state = self.state(server_id)
        if state == "loaned":
            return server_id not in self.reclaim_set
        if state == "idle":
            return server_id in self.loan_set
        return False

    def loaned_count(self) -> int:
        """Number of snapshot servers currently loaned to training."""
        return sum(1 for sid in self.servers if self.state(sid) == "loaned")

    def job_gpw(self, jid: str) -> int:
        """gpus_per_worker of a snapshot job (0 if unknown)."""
        gpw = self.jobs.get(jid, {}).get("gpus_per_worker", 1)
        return gpw if _is_int(gpw) else 0

    def queued(self, jid: str) -> bool:
        """Whether a snapshot job is queued (has no placement) in the snapshot."""
        return jid in self.jobs and not isinstance(self.jobs[jid].get("placement"), dict)


def _by_id(items: Any) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.setdefault(item["id"], item)
    return out


def _ids(servers: Any, key: str) -> list[tuple[int, str]]:
    value = servers.get(key) if isinstance(servers, dict) else None
    return [(i, x) for i, x in enumerate(value) if isinstance(x, str)] if isinstance(value, list) else []


def gather_facts(snapshot: Any, decision: Any) -> Facts:
    """Read the snapshot and the decision into :class:`Facts` (never raises)."""
    snap = snapshot if isinstance(snapshot, dict) else {}
    d = decision if isinstance(decision, dict) else None
    servers, jobs = _by_id(snap.get("servers")), _by_id(snap.get("jobs"))
    raw_servers = d.get("servers") if d else None
    reclaim, loan = _ids(raw_servers, "reclaim"), _ids(raw_servers, "loan")
    entries = d.get("jobs") if d and isinstance(d.get("jobs"), dict) else {}
    run_placements: dict[str, dict[str, int]] = {}
    run_gpus: dict[str, int] = {}
    for jid, entry in entries.items():
        if jid not in jobs or not isinstance(entry, dict) or entry.get("action") != "run":
            continue
        placement = entry.get("placement")
        if not isinstance(placement, dict):
            continue
        kept = {sid: n for sid, n in placement.items() if _is_int(n) and n > 0 and sid in servers}
        run_placements[jid] = kept
        workers = entry.get("workers")
        total = sum(n for n in placement.values() if _is_int(n) and n > 0)
        gpw = jobs[jid].get("gpus_per_worker", 1)
        run_gpus[jid] = (gpw if _is_int(gpw) else 0) * (workers if _is_int(workers) else total)
    pairs = []
    packing = d.get("packing") if d else None
    for k, entry in enumerate(packing if isinstance(packing, list) else []):
        if not isinstance(entry, dict):
            continue
        sid, g, pj = entry.get("server"), entry.get("gpus"), entry.get("jobs")
        if (isinstance(sid, str) and sid in servers and _is_int(g) and g >= 1 and isinstance(pj, list)
                and len(pj) == 2 and all(isinstance(j, str) for j in pj) and pj[0] != pj[1]):
            pairs.append((k, sid, g, list(pj)))
    return Facts(snap, d, servers, jobs, entries, reclaim, loan, {s for _, s in reclaim}, {s for _, s in loan},
                 run_placements, run_gpus, pairs)


# ---------------------------------------------------------------------------------------------------- rules
Rule = Callable[[Facts], list[Violation]]


def rule_shape(f: Facts) -> list[Violation]:
    """The decision is an object with ``jobs`` (an object keyed by job id) and ``servers``."""
    if f.decision is None:
        d = f.decision
        return [Violation("malformed", "$", "the decision must be a JSON object, got "
                          f"{type(d).__name__ if d is not None else 'something else'}")]
    out = []
    d = f.decision
    if "servers" not in d:
        out.append(Violation("malformed", "servers", "missing field 'servers' ({'reclaim': [...], 'loan': [...]})"))
    elif not isinstance(d["servers"], dict):
        out.append(Violation("malformed", "servers", f"must be an object, got {type(d['servers']).__name__}"))
    else:
        for key in ("reclaim", "loan"):
            value = d["servers"].get(key, [])
            if not isinstance(value, list):
                out.append(Violation("malformed", f"servers.{key}",
                                     f"must be a list of server ids, got {type(value).__name__}"))
                continue
            out += [Violation("malformed", f"servers.{key}[{i}]", f"server id must be a string, got {_short(x)}")
                    for i, x in enumerate(value) if not isinstance(x, str)]
    if "jobs" not in d:
        out.append(Violation("malformed", "jobs", "missing field 'jobs'"))
    elif not isinstance(d["jobs"], dict):
        out.append(Violation("malformed", "jobs",
                             f"'jobs' must be an object keyed by job id, got {type(d['jobs']).__name__}"))
    return out


def rule_format_version(f: Facts) -> list[Violation]:
    """``format_version`` is the integer 1."""
    d = f.decision
    if d is None:
        return []
    if "format_version" not in d:
        return [Violation("format-version", "format_version", "missing format_version (expected 1)")]
    if not (_is_int(d["format_version"]) and d["format_version"] == 1):
        return [Violation("format-version", "format_version",
                          f"format_version is {_short(d['format_version'])}, expected 1")]
    return []


def _distinct_known(f: Facts, entries, field: str, verb: str, seen: set[str], out: list[Violation]):
    """The ``(field path, server id)`` of ``servers.<field>`` entries seen for the first time and known to the
    snapshot; a repeated id (``<field>-duplicate``) or an unknown one (``<field>-unknown-server``) is added to
    ``out`` instead. ``seen`` collects the distinct ids, unknown ones included."""
    for i, sid in entries:
        where = f"servers.{field}[{i}]"
        if sid in seen:
            out.append(Violation(f"{field}-duplicate", where, f"server {sid!r} is {verb} twice"))
            continue
        seen.add(sid)
        if sid not in f.servers:
            out.append(Violation(f"{field}-unknown-server", where, f"server {sid!r} is not in the snapshot"))
            continue
        yield where, sid


def rule_reclaim(f: Facts) -> list[Violation]:
    """``servers.reclaim``: distinct loaned servers of the snapshot, exactly ``min(reclaim, loaned)`` of them."""
    if f.decision is None:
        return []
    out: list[Violation] = []
    seen: set[str] = set()
    for where, sid in _distinct_known(f, f.reclaim, "reclaim", "reclaimed", seen, out):
        if f.state(sid) != "loaned":
            what = f.state(sid) or f.pool(sid)
            out.append(Violation("reclaim-not-loaned", where,
                                 f"server {sid!r} is {what}, only loaned servers can be reclaimed"))
    raw = f.snapshot.get("inference")
    requested = raw.get("reclaim", 0) if isinstance(raw, dict) else 0
    requested = requested if _is_int(requested) and requested > 0 else 0
    expected = min(requested, f.loaned_count())
    servers = f.decision.get("servers")
    if isinstance(servers, dict) and isinstance(servers.get("reclaim", []), list) and len(seen) != expected:
        out.append(Violation("reclaim-count", "servers.reclaim",
                             f"{len(seen)} distinct servers reclaimed, expected min(reclaim={requested}, "
                             f"loaned={f.loaned_count()}) = {expected}"))
    return out


def rule_loan(f: Facts) -> list[Violation]:
    """``servers.loan``: distinct idle inference servers of the snapshot, none of them reclaimed."""
    out: list[Violation] = []
    for where, sid in _distinct_known(f, f.loan, "loan", "loaned", set(), out):
        if sid in f.reclaim_set:
            out.append(Violation("loan-reclaimed", where, f"server {sid!r} is both reclaimed and loaned"))
        if f.state(sid) != "idle":
            what = f.state(sid) or f"a {f.pool(sid)} server"
            out.append(Violation("loan-not-idle", where,
                                 f"server {sid!r} is {what}, only idle inference servers can be loaned"))
    return out


def rule_jobs(f: Facts) -> list[Violation]:
    """Every snapshot job appears once with a known action; wait/preempt match the job's state and carry no
    placement."""
    out = [Violation("job-missing", f"jobs.{jid}", f"job {jid!r} of the snapshot has no entry")
           for jid in f.jobs if f.decision is not None and isinstance(f.decision.get("jobs"), dict)
           and jid not in f.job_entries]
    for jid, entry in f.job_entries.items():
        where = f"jobs.{jid}"
        job = f.jobs.get(jid)
        if job is None:
            out.append(Violation("job-unknown", where, f"job {jid!r} is not in the snapshot"))
            continue
        if not isinstance(entry, dict):
            out.append(Violation("malformed", where, f"job entry must be an object, got {type(entry).__name__}"))
            continue
        action = entry.get("action")
        if action not in ACTIONS:
            out.append(Violation("action-unknown", f"{where}.action",
                                 f"action {_short(action)} is not one of {', '.join(ACTIONS)}"))
            continue
        if action == "run":
            continue
        running = isinstance(job.get("placement"), dict)
        if action == "wait" and running:
            out.append(Violation("wait-on-running", f"{where}.action",
                                 f"job {jid!r} is running: a running job not kept is 'preempt', not 'wait'"))
        if action == "preempt" and not running:
            out.append(Violation("preempt-on-queued", f"{where}.action",
                                 f"job {jid!r} is queued: a queued job not started is 'wait', not 'preempt'"))
        if entry.get("placement") not in (None, {}):
            out.append(Violation("placement-not-run", f"{where}.placement",
                                 f"job {jid!r} is '{action}' but has a placement"))
        workers = entry.get("workers")
        if workers not in (None, 0) or isinstance(workers, bool):
            out.append(Violation("placement-not-run", f"{where}.workers",
                                 f"job {jid!r} is '{action}' but has workers {_short(workers)}"))
    return out


def _run_entries(f: Facts):
    for jid, entry in f.job_entries.items():
        if jid in f.jobs and isinstance(entry, dict) and entry.get("action") == "run":
            yield jid, f.jobs[jid], entry


def rule_run(f: Facts) -> list[Violation]:
    """A ``run`` job: integer workers within [min, max]; a placement of positive counts on known, usable
    servers adding up to ``workers``; ``changed`` true iff newly started or moved."""
    out = []
    for jid, job, entry in _run_entries(f):
        where = f"jobs.{jid}"
        workers = entry.get("workers")
        lo, hi = job.get("min_workers"), job.get("max_workers")
        if "workers" not in entry:
            out.append(Violation("malformed", f"{where}.workers", "a 'run' job needs 'workers'"))
        elif not _is_int(workers):
            out.append(Violation("workers-invalid", f"{where}.workers",
                                 f"workers must be an integer, got {_short(workers)}"))
        elif _is_int(lo) and _is_int(hi) and not lo <= workers <= hi:
            out.append(Violation("workers-out-of-range", f"{where}.workers",
                                 f"workers {workers} outside [min_workers={lo}, max_workers={hi}]"))
        placement = entry.get("placement")
        if "placement" not in entry:
            out.append(Violation("malformed", f"{where}.placement", "a 'run' job needs a 'placement'"))
            continue
        if not isinstance(placement, dict):
            out.append(Violation("malformed", f"{where}.placement",
                                 f"placement must be an object server id -> workers, got {type(placement).__name__}"))
            continue
        total, all_ints = 0, True
        for sid, n in placement.items():
            pw = f"{where}.placement.{sid}"
            if not _is_int(n) or n <= 0:
                out.append(Violation("placement-workers-invalid", pw,
                                     f"workers on a server must be a positive integer, got {_short(n)}"))
                all_ints = False
                continue
            total += n
            if sid not in f.servers:
                out.append(Violation("placement-unknown-server", pw, f"server {sid!r} is not in the snapshot"))
            elif not f.usable(sid):
                state = f.state(sid)
                if sid in f.reclaim_set:
                    out.append(Violation("placement-reclaimed-server", pw,
                                         f"server {sid!r} is reclaimed in this decision"))
                elif state == "serving":
                    out.append(Violation("placement-serving-server", pw, f"server {sid!r} is serving inference"))
                elif state == "idle":
                    out.append(Violation("placement-idle-not-loaned", pw,
                                         f"server {sid!r} is idle and not in servers.loan"))
                else:
                    out.append(Violation("placement-serving-server", pw,
                                         f"server {sid!r} (state {_short(state)}) is not usable by training"))
        if _is_int(workers) and all_ints and total != workers:
            out.append(Violation("placement-sum", f"{where}.placement",
                                 f"placement adds up to {total} workers, but workers is {workers}"))
        out += _changed(jid, job, entry, placement)
    return out


def _changed(jid: str, job: dict, entry: dict, placement: dict) -> list[Violation]:
    if "changed" not in entry:
        return []
    changed = entry["changed"]
    where = f"jobs.{jid}.changed"
    if not isinstance(changed, bool):
        return [Violation("malformed", where, f"changed must be true or false, got {_short(changed)}")]
    before = job.get("placement")
    expected = not isinstance(before, dict) or before != placement
    if changed == expected:
        return []
    why = ("newly started" if not isinstance(before, dict)
           else "placement differs from the snapshot" if expected else "placement is unchanged")
    return [Violation("changed-wrong", where, f"changed is {str(changed).lower()} but the job is {why}")]


def rule_capacity(f: Facts) -> list[Violation]:
    """Per server: GPUs of the workers there, a GPU shared by two packed jobs counted once, within its GPUs.

    The violation is reported at the placement entry of the job (in decision order) whose workers make the
    server overflow, e.g. ``jobs.c.placement.t0``.
    """
    shared: dict[str, int] = {}
    for _, sid, g, _ in f.packing_pairs:
        shared[sid] = shared.get(sid, 0) + g
    used: dict[str, int] = {}
    culprit: dict[str, str] = {}
    for jid, placement in f.run_placements.items():
        gpw = f.job_gpw(jid)
        for sid, n in placement.items():
            used[sid] = used.get(sid, 0) + n * gpw
            if sid not in culprit and used[sid] - shared.get(sid, 0) > f.gpus(sid):
                culprit[sid] = jid
    out = []
    for sid, jid in culprit.items():
        net = used[sid] - shared.get(sid, 0)
        out.append(Violation("server-overcommitted", f"jobs.{jid}.placement.{sid}",
                             f"server {sid!r} has {f.gpus(sid)} GPUs but the decision uses {net} "
                             f"({used[sid]} by workers, {shared.get(sid, 0)} shared)"))
    return out


def rule_reclaim_and_loan_use(f: Facts) -> list[Violation]:
    """Reclaimed servers host no worker; loaned-in servers host at least one."""
    hosted: set[str] = set()
    for placement in f.run_placements.values():
        hosted.update(placement)
    out = []
    for i, sid in f.reclaim:
        if sid in hosted and sid in f.servers:
            hosts = sorted(j for j, p in f.run_placements.items() if sid in p)
            out.append(Violation("reclaim-hosts-worker", f"servers.reclaim[{i}]",
                                 f"reclaimed server {sid!r} hosts workers of {', '.join(hosts)}"))
    seen: set[str] = set()
    for i, sid in f.loan:
        if sid in seen:
            continue
        seen.add(sid)
        if sid in f.servers and f.state(sid) == "idle" and sid not in hosted:
            out.append(Violation("loan-unused", f"servers.loan[{i}]",
                                 f"loaned server {sid!r} hosts no worker (do not borrow what would sit unused)"))
    return out


def rule_packing_entries(f: Facts) -> list[Violation]:
    """Each packing entry: a usable server, 1..its GPUs shared, two distinct jobs that run there with that
    many GPUs to share (all entries together: a GPU holds two jobs at most), shares that name exactly the two
    jobs, each a multiple of 0.1 in (0, 1]."""
    d = f.decision
    if d is None or d.get("packing") is None:
        return []
    packing = d["packing"]
    if not isinstance(packing, list):
        return [Violation("malformed", "packing", f"packing must be a list, got {type(packing).__name__}")]
    out: list[Violation] = []
    shared_by_job: dict[tuple[str, str], int] = {}
    for k, entry in enumerate(packing):
        where = f"packing[{k}]"
        if not isinstance(entry, dict):
            out.append(Violation("malformed", where, f"packing entry must be an object, got {type(entry).__name__}"))
            continue
        sid = entry.get("server")
        server_ok = False
        if not isinstance(sid, str):
            out.append(Violation("malformed", f"{where}.server", f"server must be a server id, got {_short(sid)}"))
        elif sid not in f.servers:
            out.append(Violation("packing-unknown-server", f"{where}.server", f"server {sid!r} is not in the snapshot"))
        elif not f.usable(sid):
            out.append(Violation("packing-server-unusable", f"{where}.server",
                                 f"server {sid!r} is not usable by training"))
        else:
            server_ok = True
        g = entry.get("gpus")
        gpus_ok = _is_int(g) and g >= 1
        if not _is_int(g):
            out.append(Violation("malformed", f"{where}.gpus", f"gpus must be an integer, got {_short(g)}"))
        elif g < 1 or (server_ok and g > f.gpus(sid)):
            gpus_ok = False
            out.append(Violation("packing-gpus-out-of-range", f"{where}.gpus",
                                 f"gpus {g} outside [1, {f.gpus(sid) if server_ok else '?'}]"))
        jobs = entry.get("jobs")
        if not (isinstance(jobs, list) and len(jobs) == 2 and all(isinstance(j, str) for j in jobs)
                and jobs[0] != jobs[1]):
            out.append(Violation("packing-jobs", f"{where}.jobs",
                                 "jobs must be two distinct job ids (two jobs at most share a GPU), got "
                                 f"{_short(jobs)}"))
            jobs = None
        for j in jobs or []:
            if j not in f.run_placements or (server_ok and sid not in f.run_placements[j]):
                out.append(Violation("packing-job-not-running", f"{where}.jobs",
                                     f"job {j!r} does not run on server {sid!r} in this decision"))
            elif server_ok and gpus_ok:
                before = shared_by_job.get((sid, j), 0)
                shared_by_job[(sid, j)] = before + g
                have = f.run_placements[j][sid] * f.job_gpw(j)
                if before <= have < before + g:
                    out.append(Violation("packing-insufficient-gpus", f"{where}.gpus",
                                         f"job {j!r} shares {before + g} GPUs on {sid!r} but has only {have} GPUs "
                                         "there (a GPU holds two jobs at most)"))
        shares = entry.get("shares")
        if not isinstance(shares, dict):
            out.append(Violation("malformed", f"{where}.shares",
                                 f"shares must be an object job -> share, got {_short(shares)}"))
            continue
        if jobs is not None and set(shares) != set(jobs):
            out.append(Violation("packing-share-invalid", f"{where}.shares",
                                 f"shares must name exactly the packed jobs {jobs}, got {sorted(shares)}"))
        for j, s in shares.items():
            if not (_is_number(s) and 0 < s <= 1 and abs(s * 10 - round(s * 10)) < 1e-9):
                out.append(Violation("packing-share-invalid", f"{where}.shares.{j}",
                                     f"share must be a multiple of 0.1 in (0, 1], got {_short(s)}"))
    return out


def rule_packing_memory(f: Facts) -> list[Violation]:
    """Both jobs of a pair have a ``packing`` profile, and their ``gpu_mem_gb`` fit the server's GPUs."""
    out = []
    for k, sid, _g, jobs in f.packing_pairs:
        profiles = [f.jobs.get(j, {}).get("packing") for j in jobs]
        missing = [j for j, p in zip(jobs, profiles, strict=True) if j in f.jobs and not isinstance(p, dict)]
        if missing:
            out.append(Violation("packing-profile-missing", f"packing[{k}].jobs",
                                 f"job {missing[0]!r} has no packing profile: it cannot share GPUs"))
            continue
        if any(not isinstance(p, dict) for p in profiles):
            continue
        mem = [p.get("gpu_mem_gb") for p in profiles]
        if all(_is_number(m) for m in mem) and mem[0] + mem[1] > f.gpu_mem(sid) + 1e-9:
            out.append(Violation("packing-memory", f"packing[{k}].jobs",
                                 f"jobs {jobs[0]!r} and {jobs[1]!r} need {mem[0]} + {mem[1]} GB of GPU memory, "
                                 f"server {sid!r} has {f.gpu_mem(sid)} GB per GPU"))
    return out


def rule_packing_sets(f: Facts) -> list[Violation]:
    """Packing sets are stars (a host and guests that share only with it), a job that joins has no more GPUs
    than its host, and two jobs of equal size pack only as a pair.

    The job that joins is the one queued in the snapshot; when both or neither were queued, the pair's
    direction cannot be told from the snapshot and only the shape is checked.
    """
    partners: dict[str, set[str]] = {}
    for _, _, _, (a, b) in f.packing_pairs:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    out = []
    reported: set[tuple[str, str]] = set()
    for k, _sid, _g, jobs in f.packing_pairs:
        a, b = jobs
        key = (min(a, b), max(a, b))
        if key in reported:
            continue
        where = f"packing[{k}].jobs"
        if len(partners[a]) > 1 and len(partners[b]) > 1:
            reported.add(key)
            out.append(Violation("packing-not-star", where,
                                 f"jobs {a!r} and {b!r} both share GPUs with other jobs too: a packing set is one "
                                 "host and guests that share only with it"))
            continue
        queued = [j for j in jobs if f.queued(j)]
        if len(queued) != 1 or any(j not in f.run_gpus for j in jobs):
            continue
        guest = queued[0]
        host = b if a == guest else a
        if f.run_gpus[guest] > f.run_gpus[host]:
            reported.add(key)
            out.append(Violation("packing-direction", where,
                                 f"job {guest!r} ({f.run_gpus[guest]} GPUs) joins the smaller job {host!r} "
                                 f"({f.run_gpus[host]} GPUs): a job of fewer GPUs joins one of more"))
        elif f.run_gpus[guest] == f.run_gpus[host] and len(partners[host]) > 1:
            reported.add(key)
            out.append(Violation("packing-equal-not-pair", where,
                                 f"job {guest!r} joins {host!r} of as many GPUs ({f.run_gpus[host]}), which shares "
                                 "with other jobs too: two jobs of equal size pack only as a pair"))
    return out


def rule_summary(f: Facts) -> list[Violation]:
    """``summary.preemptions`` (when present) equals the number of ``preempt`` actions."""
    d = f.decision
    if d is None or "summary" not in d:
        return []
    summary = d["summary"]
    if not isinstance(summary, dict):
        return [Violation("malformed", "summary", f"summary must be an object, got {type(summary).__name__}")]
    if "preemptions" not in summary:
        return []
    count = sum(1 for e in f.job_entries.values() if isinstance(e, dict) and e.get("action") == "preempt")
    value = summary["preemptions"]
    if not _is_int(value) or value != count:
        return [Violation("summary-preemptions", "summary.preemptions",
                          f"summary.preemptions is {_short(value)} but {count} jobs are preempted")]
    return []


#: The rules, in the order their violations are listed.
RULES: tuple[Rule, ...] = (
    rule_shape, rule_format_version, rule_reclaim, rule_loan, rule_jobs, rule_run, rule_capacity,
    rule_reclaim_and_loan_use, rule_packing_entries, rule_packing_memory, rule_packing_sets, rule_summary,
)


def check_decision(snapshot: Any, decision: Any) -> list[Violation]:
    """Check a decision against its snapshot.

    Parameters
    ----------
    snapshot : dict or Snapshot
        The snapshot as parsed from JSON (already validated by the engine's loader), or the typed object.
    decision : Any
        The decision as parsed from JSON, or a typed ``Decision``; may be anything: a malformed decision is
        reported as violations (rule ``malformed``), never raised.

    Returns
    -------
    list of Violation
        Every broken rule, in a deterministic order; empty when the decision is valid.

    Notes
    -----
    Usable servers are training servers, loaned inference servers not in ``servers.reclaim`` and
    idle inference servers in ``servers.loan``. GPUs used on a server are the sum over running jobs of
    ``gpus_per_worker x workers`` there, minus the ``gpus`` of each packing entry on that server (a
    shared GPU is counted once). Complexity ``O(S + J + P + total placement entries)``.

    References
    ----------
    DESIGN.md, "The model" and "Formats" (format_version 1).

    Examples
    --------
    >>> from lyra_solver import check_decision
    >>> snap = {"format_version": 1, "servers": [{"id": "t0", "pool": "training", "gpus": 8}],
    ...         "jobs": [{"id": "a", "min_workers": 2, "max_workers": 4, "remaining_work": 1e5,
    ...                   "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}
    >>> ok = {"format_version": 1, "servers": {"reclaim": [], "loan": []},
    ...       "jobs": {"a": {"action": "run", "workers": 4, "placement": {"t0": 4}, "changed": True}}}
    >>> check_decision(snap, ok)
    []
    >>> bad = {"format_version": 1, "servers": {"reclaim": [], "loan": []},
    ...        "jobs": {"a": {"action": "run", "workers": 6, "placement": {"t0": 6}, "changed": True}}}
    >>> [v.rule for v in check_decision(snap, bad)]
    ['workers-out-of-range']
    """
    snapshot, decision = _plain(snapshot), _plain(decision)  # typed objects are read as their JSON
    try:
        facts = gather_facts(snapshot, decision)
        if facts.decision is None:
            return rule_shape(facts)
        return [v for rule in RULES for v in rule(facts)]
    except Exception as exc:  # pragma: no cover - a safety net: the checker never raises
        message = f"checker could not read the decision: {type(exc).__name__}: {exc}"
        return [Violation("malformed", "$", message)]


def _plain(value: Any) -> Any:
    """A typed object (msgspec Struct) as the plain JSON data it encodes to; anything else as it is."""
    if isinstance(value, msgspec.Struct):
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_scalar))
    return value


def _scalar(value: Any) -> Any:
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return value.item()
    raise TypeError(f"cannot encode {type(value).__name__}")


class _Pairs(list):
    """The (key, value) pairs of one JSON object, kept in order with duplicates (internal)."""


def _pairs_hook(found: list[str]) -> Any:
    """An ``object_pairs_hook`` that records duplicate keys in ``found`` (innermost objects first)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                found.append(key)
            out[key] = value
        return out

    return hook


def check_decision_text(snapshot: dict, text: str | bytes) -> list[Violation]:
    """Check a decision given as JSON text.

    Like :func:`check_decision`, and also reports text that is not JSON (or uses ``NaN``/``Infinity``)
    as ``malformed`` and duplicate object keys, which ``json.loads`` would silently merge: a job id
    that appears twice under ``jobs`` is ``job-duplicated``, any other repeated key ``duplicate-key``.

    Parameters
    ----------
    snapshot : dict
        The parsed snapshot.
    text : str or bytes
        The decision document.

    Returns
    -------
    list of Violation
    """

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    found: list[str] = []
    try:
        decision = json.loads(text, object_pairs_hook=_pairs_hook(found), parse_constant=reject_constant)
    except (ValueError, TypeError, RecursionError) as exc:
        return [Violation("malformed", "$", f"the decision is not valid JSON: {exc}")]
    out: list[Violation] = []
    if found:
        # Re-parse to find which duplicates sit directly under "jobs".
        job_dups: list[str] = []
        try:
            top = json.loads(text, object_pairs_hook=_Pairs)
            if isinstance(top, _Pairs):
                for key, value in top:
                    if key == "jobs" and isinstance(value, _Pairs):
                        names = [k for k, _ in value]
                        job_dups = sorted({k for k in names if names.count(k) > 1})
        except (ValueError, TypeError, RecursionError):  # pragma: no cover - parsed once already
            pass
        for jid in job_dups:
            out.append(Violation("job-duplicated", f"jobs.{jid}", f"job {jid!r} appears more than once"))
        others = [k for k in found if k not in job_dups]
        for key in sorted(set(others)):
            out.append(Violation("duplicate-key", "$", f"key {key!r} appears more than once in an object"))
    return out + check_decision(snapshot, decision)
