"""The cold-cache rule of the numba kernels (issue 24): a process whose numba cache is not known warm keeps the
numpy twins and compiles the kernels in one background process instead of in its own rounds; the marker that
says "warm" is keyed by the kernel sources, numba and Python."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lyra_solver.formulations.mckp import _numba

needs_numba = pytest.mark.skipif(not _numba.numba_available(), reason="numba not installed (the fast extra)")


@pytest.fixture
def cold(monkeypatch, tmp_path):
    """A process state with nothing loaded, the ski rental spent, no cold-cache override, and the marker kept in
    ``tmp_path`` (absent: a cold cache). Yields the list of the warm-ups started (their markers)."""
    monkeypatch.delenv("LYRA_NUMBA_COLD", raising=False)
    monkeypatch.setattr(_numba, "_MODULE", None)
    monkeypatch.setattr(_numba, "_TRIED", False)
    monkeypatch.setattr(_numba, "_SPENT", _numba.LOAD_AFTER_S)
    monkeypatch.setattr(_numba, "_WARMING", False)
    monkeypatch.setattr(_numba, "_MARKER", tmp_path / "lyra-numba-warm-test")
    started = []
    monkeypatch.setattr(_numba, "_start_warming", started.append)
    return started


@needs_numba
def test_a_cold_cache_keeps_numpy_and_starts_one_warm_up_then_loads_once_marked(cold):
    assert _numba.want(10) is False and _numba.want(10**6) is False  # neither the ski rental nor the size rule
    assert cold == [_numba._marker()]  # one warm-up per process, however often asked
    assert _numba.load(wait=False) is False and not _numba.loaded()
    _numba.mark_warm()  # what the warm-up writes at its end
    assert _numba.cache_warm() and _numba.want(10) is True
    assert cold == [_numba._marker()]


@needs_numba
def test_the_compile_override_and_an_explicit_load_take_the_kernels_on_a_cold_cache(cold, monkeypatch):
    monkeypatch.setenv("LYRA_NUMBA_COLD", "compile")
    assert _numba.ready() and _numba.want(10) is True
    monkeypatch.delenv("LYRA_NUMBA_COLD")
    assert _numba.ready() is False  # (cold again: a warm-up started)
    assert _numba.load() is True and _numba.loaded()  # wait=True: compiled here if it must be
    assert _numba.ready() is True
    assert len(cold) == 1


def test_below_the_rules_nothing_is_checked_or_started(cold, monkeypatch):
    monkeypatch.setattr(_numba, "_SPENT", 0.0)
    assert _numba.want(10) is False and cold == []


def _package(root: Path) -> Path:
    for name in _numba.KERNEL_SOURCES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("# kernels\n")
    return root


@needs_numba
def test_the_marker_is_keyed_by_the_kernel_sources_and_lives_in_the_cache_folder(tmp_path):
    root = _package(tmp_path / "pkg")
    first = _numba.marker_path(root)
    assert first is not None and first.parent == root / "formulations" / "mckp" / "__pycache__"
    assert _numba.marker_path(root) == first  # a pure function of the stamps
    source = root / _numba.KERNEL_SOURCES[2]
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a kernel source changed
    assert _numba.marker_path(root) not in (None, first)
    other = _numba.marker_path(root, str(tmp_path / "numba-cache"))
    assert other is not None and other.parent == tmp_path / "numba-cache"
    (root / _numba.KERNEL_SOURCES[0]).unlink()
    assert _numba.marker_path(root) is None  # a source missing: no marker, the cache taken as warm


@needs_numba
def test_a_cache_folder_that_cannot_be_written_gives_no_marker(tmp_path, monkeypatch):
    root = _package(tmp_path / "pkg")
    folder = root / "formulations" / "mckp" / "__pycache__"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == folder else real_access(path, mode))
    assert _numba.marker_path(root) is None  # (chmod would not do: the tests may run as root)
    monkeypatch.setattr(os, "access", real_access)
    assert _numba.marker_path(root) is not None


def test_one_warm_up_per_cache_a_stale_lock_is_taken_over(monkeypatch, tmp_path):
    spawned = []

    class FakePopen:
        def __init__(self, argv, **kwargs):
            spawned.append((argv, kwargs))
            self.pid = 4242

    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    monkeypatch.setattr(_numba, "_WARM_PROCS", [])
    marker = tmp_path / "lyra-numba-warm-test"
    lock = tmp_path / "lyra-numba-warming.lock"
    _numba._start_warming(marker)
    assert len(spawned) == 1 and lock.read_text() == "4242\n" and len(_numba._WARM_PROCS) == 1
    argv, kwargs = spawned[0]
    assert argv[:3] == [sys.executable, "-m", _numba.WARM_MODULE] and argv[-2:] == ["--lock", str(lock)]
    assert kwargs["start_new_session"] and kwargs["stdout"] == subprocess.DEVNULL
    _numba._start_warming(marker)  # another process while the first runs: the lock is held
    assert len(spawned) == 1
    old = time.time() - _numba.WARMING_STALE_S - 60
    os.utime(lock, (old, old))  # its process was killed long ago
    _numba._start_warming(marker)
    assert len(spawned) == 2 and lock.read_text() == "4242\n"


def test_the_warm_module_removes_its_lock_and_fails_cleanly_without_numba(tmp_path):
    lock = tmp_path / "lyra-numba-warming.lock"
    lock.write_text("1\n")
    proc = subprocess.run([sys.executable, "-m", "lyra_solver.bench.warm", "--lock", str(lock)],
                          capture_output=True, text=True, env={**os.environ, "LYRA_NO_NUMBA": "1"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == ("warm: numba is not installed (the `fast` extra) or LYRA_NO_NUMBA is set: "
                                   "nothing to compile")
    assert not lock.exists()
