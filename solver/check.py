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
from collections.abc import Iterable
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
        The lines joined by ``"\\n"`` (no trailing newline); empty string for no violation.
    """
    return "\n".join(f"{v.rule} at {v.where}: {v.message}" for v in violations)


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


class _Checker:
    """Accumulates violations of one decision against one snapshot (internal)."""

    def __init__(self, snapshot: dict, decision: Any) -> None:
        self.snapshot = snapshot if isinstance(snapshot, dict) else {}
        self.decision = decision
        self.out: list[Violation] = []
        servers = self.snapshot.get("servers")
        self.servers: dict[str, dict] = {}
        for server in servers if isinstance(servers, list) else []:
            if isinstance(server, dict) and isinstance(server.get("id"), str):
                self.servers.setdefault(server["id"], server)
        jobs = self.snapshot.get("jobs")
        self.jobs: dict[str, dict] = {}
        for job in jobs if isinstance(jobs, list) else []:
            if isinstance(job, dict) and isinstance(job.get("id"), str):
                self.jobs.setdefault(job["id"], job)
        # Filled while checking.
        self.reclaim: list[tuple[int, str]] = []
        self.loan: list[tuple[int, str]] = []
        self.reclaim_set: set[str] = set()
        self.loan_set: set[str] = set()
        # job id -> {server id: workers} for valid run jobs (only positive int entries kept)
        self.run_placements: dict[str, dict[str, int]] = {}
        # job id -> total GPUs in the decision (workers x gpus_per_worker), for run jobs
        self.run_gpus: dict[str, int] = {}

    # -- helpers -----------------------------------------------------------------------------------

    def add(self, rule: str, where: str, message: str) -> None:
        """Record one violation."""
        self.out.append(Violation(rule, where, message))

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

    # -- top level ---------------------------------------------------------------------------------

    def run(self) -> list[Violation]:
        """Check everything; return the violations in a stable order."""
        d = self.decision
        if not isinstance(d, dict):
            self.add("malformed", "$", f"the decision must be a JSON object, got {type(d).__name__}")
            return self.out
        self.check_format_version(d)
        self.check_servers(d)
        jobs = d.get("jobs")
        if "jobs" not in d:
            self.add("malformed", "jobs", "missing field 'jobs'")
            jobs = {}
        elif not isinstance(jobs, dict):
            self.add("malformed", "jobs",
                     f"'jobs' must be an object keyed by job id, got {type(jobs).__name__}")
            jobs = {}
        self.check_jobs(jobs)
        self.check_capacity()
        self.check_reclaim_and_loan_use()
        self.check_packing(d)
        self.check_summary(d, jobs)
        return self.out

    def check_format_version(self, d: dict) -> None:
        """``format_version`` must be the integer 1."""
        if "format_version" not in d:
            self.add("format-version", "format_version", "missing format_version (expected 1)")
        elif not (_is_int(d["format_version"]) and d["format_version"] == 1):
            self.add("format-version", "format_version",
                     f"format_version is {_short(d['format_version'])}, expected 1")

    # -- servers -----------------------------------------------------------------------------------

    def _server_list(self, servers: dict, key: str) -> list[tuple[int, str]]:
        """Validated ``servers.<key>`` entries as (index, id); structural errors are reported.

        A missing list is the empty list (its default; the engine omits defaults).
        """
        where = f"servers.{key}"
        if key not in servers:
            return []
        value = servers[key]
        if not isinstance(value, list):
            self.add("malformed", where, f"must be a list of server ids, got {type(value).__name__}")
            return []
        entries = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                entries.append((i, item))
            else:
                self.add("malformed", f"{where}[{i}]", f"server id must be a string, got {_short(item)}")
        return entries

    def check_servers(self, d: dict) -> None:
        """Static rules of ``servers.reclaim`` and ``servers.loan`` (count, identity, state)."""
        servers = d.get("servers")
        if "servers" not in d:
            self.add("malformed", "servers", "missing field 'servers' ({'reclaim': [...], 'loan': [...]})")
            servers = {}
        elif not isinstance(servers, dict):
            self.add("malformed", "servers", f"must be an object, got {type(servers).__name__}")
            servers = {}
        if isinstance(d.get("servers"), dict):
            self.reclaim = self._server_list(servers, "reclaim")
            self.loan = self._server_list(servers, "loan")
        seen: set[str] = set()
        for i, sid in self.reclaim:
            where = f"servers.reclaim[{i}]"
            if sid in seen:
                self.add("reclaim-duplicate", where, f"server {sid!r} is reclaimed twice")
                continue
            seen.add(sid)
            if sid not in self.servers:
                self.add("reclaim-unknown-server", where, f"server {sid!r} is not in the snapshot")
            elif self.state(sid) != "loaned":
                what = self.state(sid) or self.pool(sid)
                self.add("reclaim-not-loaned", where, f"server {sid!r} is {what}, only loaned servers can be "
                         "reclaimed")
        self.reclaim_set = seen
        raw = self.snapshot.get("inference")
        requested = raw.get("reclaim", 0) if isinstance(raw, dict) else 0
        requested = requested if _is_int(requested) and requested > 0 else 0
        expected = min(requested, self.loaned_count())
        if isinstance(servers, dict) and isinstance(servers.get("reclaim", []), list) and len(seen) != expected:
            self.add("reclaim-count", "servers.reclaim",
                     f"{len(seen)} distinct servers reclaimed, expected min(reclaim={requested}, "
                     f"loaned={self.loaned_count()}) = {expected}")
        seen_loan: set[str] = set()
        for i, sid in self.loan:
            where = f"servers.loan[{i}]"
            if sid in seen_loan:
                self.add("loan-duplicate", where, f"server {sid!r} is loaned twice")
                continue
            seen_loan.add(sid)
            if sid not in self.servers:
                self.add("loan-unknown-server", where, f"server {sid!r} is not in the snapshot")
                continue
            if sid in self.reclaim_set:
                self.add("loan-reclaimed", where, f"server {sid!r} is both reclaimed and loaned")
            if self.state(sid) != "idle":
                what = self.state(sid) or f"a {self.pool(sid)} server"
                self.add("loan-not-idle", where, f"server {sid!r} is {what}, only idle inference servers can "
                         "be loaned")
        self.loan_set = seen_loan

    # -- jobs --------------------------------------------------------------------------------------

    def check_jobs(self, jobs: dict) -> None:
        """Per-job rules: presence, action, workers, placement, ``changed``."""
        for jid in self.jobs:
            if jid not in jobs:
                self.add("job-missing", f"jobs.{jid}", f"job {jid!r} of the snapshot has no entry")
        for jid, entry in jobs.items():
            where = f"jobs.{jid}"
            job = self.jobs.get(jid)
            if job is None:
                self.add("job-unknown", where, f"job {jid!r} is not in the snapshot")
                continue
            if not isinstance(entry, dict):
                self.add("malformed", where, f"job entry must be an object, got {type(entry).__name__}")
                continue
            action = entry.get("action")
            running = isinstance(job.get("placement"), dict)
            if action not in ACTIONS:
                self.add("action-unknown", f"{where}.action",
                         f"action {_short(action)} is not one of {', '.join(ACTIONS)}")
                continue
            if action == "wait":
                if running:
                    self.add("wait-on-running", f"{where}.action",
                             f"job {jid!r} is running: a running job not kept is 'preempt', not 'wait'")
                self.check_idle_entry(jid, entry)
            elif action == "preempt":
                if not running:
                    self.add("preempt-on-queued", f"{where}.action",
                             f"job {jid!r} is queued: a queued job not started is 'wait', not 'preempt'")
                self.check_idle_entry(jid, entry)
            else:
                self.check_run(jid, job, entry)

    def check_idle_entry(self, jid: str, entry: dict) -> None:
        """A ``wait``/``preempt`` entry carries no workers and no placement."""
        where = f"jobs.{jid}"
        placement = entry.get("placement")
        if placement not in (None, {}):
            self.add("placement-not-run", f"{where}.placement",
                     f"job {jid!r} is '{entry.get('action')}' but has a placement")
        workers = entry.get("workers")
        if workers not in (None, 0) or isinstance(workers, bool):
            self.add("placement-not-run", f"{where}.workers",
                     f"job {jid!r} is '{entry.get('action')}' but has workers {_short(workers)}")

    def check_run(self, jid: str, job: dict, entry: dict) -> None:
        """Rules of one ``run`` entry."""
        where = f"jobs.{jid}"
        workers = entry.get("workers")
        lo, hi = job.get("min_workers"), job.get("max_workers")
        workers_ok = _is_int(workers)
        if "workers" not in entry:
            self.add("malformed", f"{where}.workers", "a 'run' job needs 'workers'")
        elif not workers_ok:
            self.add("workers-invalid", f"{where}.workers",
                     f"workers must be an integer, got {_short(workers)}")
        elif _is_int(lo) and _is_int(hi) and not lo <= workers <= hi:
            self.add("workers-out-of-range", f"{where}.workers",
                     f"workers {workers} outside [min_workers={lo}, max_workers={hi}]")
        placement = entry.get("placement")
        if "placement" not in entry:
            self.add("malformed", f"{where}.placement", "a 'run' job needs a 'placement'")
            return
        if not isinstance(placement, dict):
            self.add("malformed", f"{where}.placement",
                     f"placement must be an object server id -> workers, got {type(placement).__name__}")
            return
        kept: dict[str, int] = {}
        total = 0
        all_ints = True
        for sid, n in placement.items():
            pw = f"{where}.placement.{sid}"
            if not _is_int(n) or n <= 0:
                self.add("placement-workers-invalid", pw, f"workers on a server must be a positive integer, "
                         f"got {_short(n)}")
                all_ints = False
                continue
            total += n
            if sid not in self.servers:
                self.add("placement-unknown-server", pw, f"server {sid!r} is not in the snapshot")
                continue
            kept[sid] = n
            if self.usable(sid):
                continue
            state = self.state(sid)
            if sid in self.reclaim_set:
                self.add("placement-reclaimed-server", pw, f"server {sid!r} is reclaimed in this decision")
            elif state == "serving":
                self.add("placement-serving-server", pw, f"server {sid!r} is serving inference")
            elif state == "idle":
                self.add("placement-idle-not-loaned", pw, f"server {sid!r} is idle and not in servers.loan")
            else:
                self.add("placement-serving-server", pw,
                         f"server {sid!r} (state {_short(state)}) is not usable by training")
        if workers_ok and all_ints and total != workers:
            self.add("placement-sum", f"{where}.placement",
                     f"placement adds up to {total} workers, but workers is {workers}")
        self.run_placements[jid] = kept
        gpw = job.get("gpus_per_worker")
        gpw = gpw if _is_int(gpw) else 0
        self.run_gpus[jid] = gpw * (workers if workers_ok else total)
        self.check_changed(jid, job, entry, placement)

    def check_changed(self, jid: str, job: dict, entry: dict, placement: dict) -> None:
        """``changed`` (when present) is true iff the job is newly started or its placement moved."""
        if "changed" not in entry:
            return
        changed = entry["changed"]
        where = f"jobs.{jid}.changed"
        if not isinstance(changed, bool):
            self.add("malformed", where, f"changed must be true or false, got {_short(changed)}")
            return
        before = job.get("placement")
        expected = not isinstance(before, dict) or before != placement
        if changed != expected:
            why = ("newly started" if not isinstance(before, dict)
                   else "placement differs from the snapshot" if expected else "placement is unchanged")
            self.add("changed-wrong", where, f"changed is {str(changed).lower()} but the job is {why}")

    # -- capacity, reclaim, loan use ---------------------------------------------------------------

    def shared_gpus(self) -> dict[str, int]:
        """GPUs counted twice per server because two packed jobs share them (valid entries only)."""
        shared: dict[str, int] = {}
        packing = self.decision.get("packing") if isinstance(self.decision, dict) else None
        for entry in packing if isinstance(packing, list) else []:
            if not isinstance(entry, dict):
                continue
            sid, g = entry.get("server"), entry.get("gpus")
            if isinstance(sid, str) and _is_int(g) and g > 0:
                shared[sid] = shared.get(sid, 0) + g
        return shared

    def check_capacity(self) -> None:
        """Per server: sum of workers x gpus_per_worker minus shared GPUs <= server GPUs.

        The violation is reported at the placement entry of the job (in decision order) whose
        workers make the server overflow, e.g. ``jobs.c.placement.t0``.
        """
        shared = self.shared_gpus()
        used: dict[str, int] = {}
        culprit: dict[str, str] = {}
        for jid, placement in self.run_placements.items():
            gpw = self.job_gpw(jid)
            for sid, n in placement.items():
                used[sid] = used.get(sid, 0) + n * gpw
                if sid not in culprit and used[sid] - shared.get(sid, 0) > self.gpus(sid):
                    culprit[sid] = jid
        for sid, jid in culprit.items():
            net = used[sid] - shared.get(sid, 0)
            self.add("server-overcommitted", f"jobs.{jid}.placement.{sid}",
                     f"server {sid!r} has {self.gpus(sid)} GPUs but the decision uses {net} "
                     f"({used[sid]} by workers, {shared.get(sid, 0)} shared)")

    def check_reclaim_and_loan_use(self) -> None:
        """Reclaimed servers host no worker; loaned-in servers host at least one."""
        hosted: set[str] = set()
        for placement in self.run_placements.values():
            hosted.update(placement)
        for i, sid in self.reclaim:
            if sid in hosted and sid in self.servers:
                hosts = sorted(j for j, p in self.run_placements.items() if sid in p)
                self.add("reclaim-hosts-worker", f"servers.reclaim[{i}]",
                         f"reclaimed server {sid!r} hosts workers of {', '.join(hosts)}")
        seen: set[str] = set()
        for i, sid in self.loan:
            if sid in seen:
                continue
            seen.add(sid)
            if sid in self.servers and self.state(sid) == "idle" and sid not in hosted:
                self.add("loan-unused", f"servers.loan[{i}]",
                         f"loaned server {sid!r} hosts no worker (do not borrow what would sit unused)")

    # -- packing -----------------------------------------------------------------------------------

    def check_packing(self, d: dict) -> None:
        """Rules of the optional ``packing`` list."""
        if "packing" not in d or d["packing"] is None:
            return
        packing = d["packing"]
        if not isinstance(packing, list):
            self.add("malformed", "packing", f"packing must be a list, got {type(packing).__name__}")
            return
        # (server, job) -> GPUs of that job on that server shared with someone
        shared_by_job: dict[tuple[str, str], int] = {}
        for k, entry in enumerate(packing):
            self.check_packing_entry(k, entry, shared_by_job)

    def job_gpw(self, jid: str) -> int:
        """gpus_per_worker of a snapshot job (0 if unknown)."""
        gpw = self.jobs.get(jid, {}).get("gpus_per_worker")
        return gpw if _is_int(gpw) else 0

    def check_packing_entry(self, k: int, entry: Any, shared_by_job: dict[tuple[str, str], int]) -> None:
        """Rules of one packing entry; accumulates shared GPUs per (server, job)."""
        where = f"packing[{k}]"
        if not isinstance(entry, dict):
            self.add("malformed", where, f"packing entry must be an object, got {type(entry).__name__}")
            return
        sid = entry.get("server")
        server_ok = False
        if not isinstance(sid, str):
            self.add("malformed", f"{where}.server", f"server must be a server id, got {_short(sid)}")
        elif sid not in self.servers:
            self.add("packing-unknown-server", f"{where}.server", f"server {sid!r} is not in the snapshot")
        elif not self.usable(sid):
            self.add("packing-server-unusable", f"{where}.server",
                     f"server {sid!r} is not usable by training")
        else:
            server_ok = True
        g = entry.get("gpus")
        gpus_ok = _is_int(g) and g >= 1
        if not _is_int(g):
            self.add("malformed", f"{where}.gpus", f"gpus must be an integer, got {_short(g)}")
        elif g < 1 or (server_ok and g > self.gpus(sid)):
            gpus_ok = False
            self.add("packing-gpus-out-of-range", f"{where}.gpus",
                     f"gpus {g} outside [1, {self.gpus(sid) if server_ok else '?'}]")
        jobs = entry.get("jobs")
        if not (isinstance(jobs, list) and len(jobs) == 2 and all(isinstance(j, str) for j in jobs)
                and jobs[0] != jobs[1]):
            self.add("packing-jobs", f"{where}.jobs",
                     f"jobs must be two distinct job ids, got {_short(jobs)}")
            jobs = None
        if jobs is not None:
            for j in jobs:
                if j not in self.run_placements or (server_ok and sid not in self.run_placements[j]):
                    self.add("packing-job-not-running", f"{where}.jobs",
                             f"job {j!r} does not run on server {sid!r} in this decision")
                elif server_ok and gpus_ok:
                    before = shared_by_job.get((sid, j), 0)
                    shared_by_job[(sid, j)] = before + g
                    have = self.run_placements[j][sid] * self.job_gpw(j)
                    if before <= have < before + g:
                        self.add("packing-insufficient-gpus", f"{where}.gpus",
                                 f"job {j!r} shares {before + g} GPUs on {sid!r} but has only {have} GPUs there")
            self.check_packing_direction(where, jobs)
        shares = entry.get("shares")
        if not isinstance(shares, dict):
            self.add("malformed", f"{where}.shares",
                     f"shares must be an object job -> share, got {_short(shares)}")
            return
        if jobs is not None and set(shares) != set(jobs):
            self.add("packing-share-invalid", f"{where}.shares",
                     f"shares must name exactly the packed jobs {jobs}, got {sorted(shares)}")
        for j, s in shares.items():
            ok = _is_number(s) and 0 < s <= 1 and abs(s * 10 - round(s * 10)) < 1e-9
            if not ok:
                self.add("packing-share-invalid", f"{where}.shares.{j}",
                         f"share must be a multiple of 0.1 in (0, 1], got {_short(s)}")

    def check_packing_direction(self, where: str, jobs: list[str]) -> None:
        """The job that joins (the one queued in the snapshot) has no more GPUs than its host.

        When both or neither of the two jobs were queued, who joined whom cannot be told from the
        snapshot, so nothing is checked.
        """
        queued = [j for j in jobs if j in self.jobs and not isinstance(self.jobs[j].get("placement"), dict)]
        if len(queued) != 1 or any(j not in self.run_gpus for j in jobs):
            return
        guest = queued[0]
        host = jobs[1] if jobs[0] == guest else jobs[0]
        if self.run_gpus[guest] > self.run_gpus[host]:
            self.add("packing-direction", f"{where}.jobs",
                     f"job {guest!r} ({self.run_gpus[guest]} GPUs) joins the smaller job {host!r} "
                     f"({self.run_gpus[host]} GPUs): a job of fewer GPUs joins one of more")

    # -- summary -----------------------------------------------------------------------------------

    def check_summary(self, d: dict, jobs: dict) -> None:
        """``summary.preemptions`` (when present) equals the number of ``preempt`` actions."""
        if "summary" not in d:
            return
        summary = d["summary"]
        if not isinstance(summary, dict):
            self.add("malformed", "summary", f"summary must be an object, got {type(summary).__name__}")
            return
        if "preemptions" not in summary:
            return
        count = sum(1 for e in jobs.values() if isinstance(e, dict) and e.get("action") == "preempt")
        value = summary["preemptions"]
        if not _is_int(value) or value != count:
            self.add("summary-preemptions", "summary.preemptions",
                     f"summary.preemptions is {_short(value)} but {count} jobs are preempted")


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
    """
    snapshot, decision = _plain(snapshot), _plain(decision)  # typed objects are read as their JSON
    try:
        return _Checker(snapshot, decision).run()
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
