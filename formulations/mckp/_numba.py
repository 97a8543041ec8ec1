"""The one loader of the package's numba kernels (the ``fast`` extra), and the rule that decides when to load them.

Every compiled kernel lives at module level in :mod:`lyra_solver.formulations.mckp._nbkernels` (so that numba's
disk cache holds every one of them: a kernel made in a closure is compiled again in every process) and is handed
out by :func:`kernels` only; each has a numpy twin in the module that calls it, which returns the same arrays,
element for element (the same candidates, compared and rounded by the same float expressions, ties broken by the
same rules), so the path taken changes the time, never the answer:

* the exact core's search (:mod:`lyra_solver.formulations.mckp.core`): ``count``, ``step``, ``scan`` (one core
  step is a single k-way merge of the ``k`` weight-sorted candidate lists, one per item of the entering class,
  that updates the incumbent, fathoms by the upper bound and drops dominated candidates in one pass:
  :math:`O(S k^2)` time, :math:`O(S + |K|)` resident memory for the ``|K|`` kept states), and ``select_items``;
  ``search``, the whole loop of core steps in one call (the same steps as the Python loop of ``core._search``,
  which it hands the search back to where links would be dropped or a limit may be hit; its steps run in
  ``_run_steps``, whose arrays never change, so that numba counts no reference in the loop);
* the front door's checks (:func:`lyra_solver.formulations.mckp.solve_mckp`): ``front_checks``, once loaded;
* the core's prepare and start phases: ``prepare_hulls``, ``class_items``, ``fit_prefix`` (and
  ``fit_prefix_short`` for the greedy rounds), ``lp_levels``, ``regrets``, ``greedy_fill``, ``face_fill``
  (twins ``core._face_fill_numpy`` and, with ``layers=1``, ``core._face_fill_loss1_numpy``);
* ``solve_compiled``, a solve without limits in one call (the prepare and start phases, the root test and the
  runs of ``search``; numpy's float sums by ``np_sum``, bit for bit), which the core takes whenever it can;
* the greedy heuristic's sequential scan (:mod:`lyra_solver.formulations.mckp.greedy`): ``greedy_scan``;
* the upper hulls' sweep of :func:`lyra_solver.formulations.mckp._lp.upper_hull` (the greedy's LP bound):
  ``hull_stacks``.

When to load (cold start, issue 22): importing numba and loading the kernels from their disk cache costs about
0.9 s of a new process (2 shared cores), far more than a solve of a thousand classes by the numpy twins (a few
milliseconds). So the default (``use_numba=None``) takes the compiled kernels only

* when they are loaded in this process already (:func:`loaded`: by :func:`load`, or by an earlier decision
  below), then for every size;
* when the problem has at least :data:`LOAD_MIN_ITEMS` items (the kernels pay on one solve of that size);
* once this process has spent :data:`LOAD_AFTER_S` seconds in completed numpy-path solves of the core or the
  greedy (:func:`charge`: a long-running caller, such as the simulator or a benchmark, gains from then on);
* within one solve, once its own numpy search has run :data:`SWITCH_AFTER_S` seconds (a search that long is
  likely to run longer: the load cost is then risked once, as in ski rental); the twins give the same arrays, so
  switching mid-search changes nothing but the time.

The answer never depends on the path; only ``stats["numba"]`` and the time do. ``LYRA_NO_NUMBA`` (any non-empty
value) disables the kernels.

A cold cache (issue 24): the 0.9 s above holds once numba's disk cache holds the kernels. In a new checkout or
installation, after a kernel's source changes, or under another numba or Python, numba compiles each kernel on its
first call instead: about 30 s of one core for the kernels that a simulator round takes (2-core machine, numba
0.68), which no solve of these sizes repays. So every rule above takes the kernels only when the cache is
known warm (:func:`cache_warm`: a marker that :mod:`lyra_solver.bench.warm` writes beside the cache once it has
compiled every kernel the engine's paths take, keyed by the kernel sources' size and time stamp, numba's version
and Python's); while it is not, the process keeps the numpy twins and starts that module once in the background
(:func:`ready`: a detached process, one at a time per cache, on the other core), and takes the kernels by the same
rules once it has finished. ``LYRA_NUMBA_COLD=compile`` restores compiling in the process (tests that time or
count the compiled path); :func:`load` does it too, unless called with ``wait=False``. Where the marker cannot be
written (a read-only installation without ``NUMBA_CACHE_DIR``), the cache is taken as warm, as before.
"""
from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from types import ModuleType

__all__ = ["KERNEL_SOURCES", "LOAD_AFTER_S", "LOAD_MIN_ITEMS", "SWITCH_AFTER_S", "WARMING_STALE_S", "cache_warm",
           "charge", "kernels", "load", "loaded", "mark_warm", "marker_path", "numba_available", "ready", "want"]

#: Problems with at least this many items load the kernels on their first solve (a solve of that size by the
#: numpy twins costs about what loading the kernels does).
LOAD_MIN_ITEMS = 200_000

#: Seconds of completed numpy-path solves in a process after which the next solve loads the kernels: about what
#: loading them costs (ski rental: a process that has spent that much is likely to spend more, and it never pays
#: more than twice the better choice); a single command on a thousand classes or servers stays below it.
LOAD_AFTER_S = 0.5

#: Seconds of one solve's numpy search after which it loads the kernels and continues with them.
SWITCH_AFTER_S = 0.5

#: The package's modules of numba kernels, relative to the package folder (``lyra_solver``): the sources whose
#: stamps key the warm marker (:func:`cache_warm`)
KERNEL_SOURCES = ("formulations/mckp/_nbkernels.py", "heuristics/_nbadmit.py", "_nbvalues.py", "bench/sim/_nbtime.py")

#: The module that compiles every kernel into the cache and writes the marker (run in the background, see
#: :func:`ready`; started by name: this folder imports no other)
WARM_MODULE = "lyra_solver.bench.warm"

#: Seconds after which a warm-up's lock whose process never removed it (killed) is taken as abandoned
WARMING_STALE_S = 900.0

_MODULE: ModuleType | None = None
_TRIED = False
_SPENT = 0.0
#: The warm marker's path (``False``: not computed yet; ``None``: no writable place, the cache taken as warm)
_MARKER: Path | None | bool = False
_WARMING = False  # this process started (or found running) a warm-up
_WARM_PROCS: list = []  # the warm-up this process started (its Popen)


def numba_available() -> bool:
    """Whether numba is installed and not disabled by the environment variable ``LYRA_NO_NUMBA``.

    Depends on the installation only (never on what ran before in the process); imports nothing. The
    installation is looked up once per process (``find_spec`` costs about 40 us, and :func:`want` asks at every
    solve while a cold cache is being compiled in the background); the variable is read at every call.
    """
    if os.environ.get("LYRA_NO_NUMBA"):
        return False
    return _numba_installed()


@functools.cache
def _numba_installed() -> bool:
    """Whether numba can be imported (its module spec is found), looked up once."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def kernels() -> ModuleType | None:
    """The compiled kernels (the module :mod:`lyra_solver.formulations.mckp._nbkernels`), imported once per
    process (from numba's disk cache, or compiled on a kernel's first call), or ``None`` when
    :func:`numba_available` is false or numba fails to import."""
    global _MODULE, _TRIED
    if _TRIED:
        return _MODULE
    _TRIED = True
    if not numba_available():
        return None
    try:
        # the submodule by its full name: the package (whose front door imports this module) is not imported here
        import lyra_solver.formulations.mckp._nbkernels as _nbkernels
    except ImportError:
        return None
    _MODULE = _nbkernels
    return _MODULE


def load(*, wait: bool = True) -> bool:
    """Load the kernels now (e.g. at the start of a long-running process, so that every later solve, small ones
    included, takes them); ``True`` when they are loaded. With ``wait=False`` a cold cache is not compiled in this
    process: :func:`ready` starts the background warm-up and this returns ``False`` (the rules of :func:`want`
    load the kernels once it has finished)."""
    if not wait and _MODULE is None and numba_available() and not ready():
        return False
    return kernels() is not None


def loaded() -> bool:
    """Whether the kernels are loaded in this process."""
    return _MODULE is not None


def want(n_items: int) -> bool:
    """The default path of a solve of ``n_items`` items: compiled when loaded already, when the problem is
    large (:data:`LOAD_MIN_ITEMS`) or when this process has spent :data:`LOAD_AFTER_S` in numpy-path solves
    (and numba is available). See the module docstring."""
    if _MODULE is not None:
        return True
    if _TRIED or not (n_items >= LOAD_MIN_ITEMS or _SPENT >= LOAD_AFTER_S):
        return False
    return numba_available() and ready()


def charge(seconds: float) -> None:
    """Record ``seconds`` of a completed numpy-path solve that took the default path (see :func:`want`)."""
    global _SPENT
    _SPENT += max(float(seconds), 0.0)


def _marker() -> Path | None:
    """The warm marker's path for this installation (:func:`marker_path` of the package folder and
    ``NUMBA_CACHE_DIR``), computed once per process."""
    global _MARKER
    if _MARKER is False:
        root = Path(__file__).parents[2]  # lyra_solver, not resolved: the repository links the package's folders
        _MARKER = marker_path(root, os.environ.get("NUMBA_CACHE_DIR"))
    return _MARKER  # type: ignore[return-value]


def marker_path(root: Path, cache_dir: str | None = None) -> Path | None:
    """The warm marker of the package folder ``root``: in numba's cache folder of :data:`KERNEL_SOURCES`' first
    module (its ``__pycache__``, or ``cache_dir``), named by a hash of the sources' sizes and time stamps,
    numba's version and Python's; ``None`` where a source or numba is missing or that folder cannot be written.
    A changed kernel source, numba or Python names another marker (numba's cache misses then too)."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    try:
        stamps = [(name, st.st_size, st.st_mtime_ns) for name in KERNEL_SOURCES for st in (os.stat(root / name),)]
        numba_version = version("numba")
    except (OSError, PackageNotFoundError):
        return None
    key = repr((stamps, numba_version, sys.version, sys.platform)).encode()
    folder = Path(cache_dir) if cache_dir else root / "formulations" / "mckp" / "__pycache__"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    return folder / f"lyra-numba-warm-{hashlib.sha256(key).hexdigest()[:16]}"


def cache_warm() -> bool:
    """Whether numba's disk cache is known to hold the kernels of this installation (the marker of
    :mod:`lyra_solver.bench.warm` exists), or no marker can be kept (then taken as warm). One ``stat`` once the
    marker's path is known."""
    marker = _marker()
    return marker is None or marker.exists()


def mark_warm() -> None:
    """Record that numba's cache holds the kernels of this installation (:mod:`lyra_solver.bench.warm`, once
    every kernel has run). Written whole (a temporary file renamed), so a reader sees it or not."""
    marker = _marker()
    if marker is None:
        return
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(f"numba kernels compiled {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    os.replace(tmp, marker)


def ready() -> bool:
    """Whether the kernels can be taken now at the cost of a load, not of a compilation: loaded already, numba's
    cache warm (:func:`cache_warm`), or ``LYRA_NUMBA_COLD=compile``. Otherwise starts the background warm-up
    (:data:`WARM_MODULE`, at most one per cache: a lock file beside the marker, taken as abandoned after
    :data:`WARMING_STALE_S`) once per process and returns ``False``; later calls return ``True`` once it has
    written the marker."""
    global _WARMING
    if _MODULE is not None or os.environ.get("LYRA_NUMBA_COLD") == "compile" or cache_warm():
        return True
    if not _WARMING:
        _WARMING = True
        _start_warming(_marker())  # type: ignore[arg-type]
    return False


def _start_warming(marker: Path) -> None:
    """Start ``python -m WARM_MODULE --lock LOCK`` detached (its output discarded), unless another process holds
    the lock. Any OS error leaves the process on the numpy twins."""
    import subprocess

    lock = marker.with_name("lyra-numba-warming.lock")
    try:
        if lock.exists() and time.time() - lock.stat().st_mtime > WARMING_STALE_S:
            lock.unlink(missing_ok=True)
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:  # held by another process's warm-up (or not creatable): nothing to start
        return
    try:
        proc = subprocess.Popen([sys.executable, "-m", WARM_MODULE, "--quiet", "--lock", str(lock)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        _WARM_PROCS.append(proc)  # kept: a Popen collected while its process runs warns (ResourceWarning)
        os.write(fd, f"{proc.pid}\n".encode())
    except OSError:
        lock.unlink(missing_ok=True)
    finally:
        os.close(fd)
