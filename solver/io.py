"""Reading and writing the JSON formats: decode, validate, encode deterministically.

Every reading function raises :class:`~solver.errors.InputError` (never another exception) on bad input,
with the field path of the problem. Input files are only read.
"""
from __future__ import annotations

import contextlib
import math
import os
import stat
import sys
import tempfile

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Decision, MCKPInstance, Snapshot, canonical
from lyra_solver.validate import check_duplicate_keys, decode, numpy_scalar, parse_snapshot

__all__ = ["MAX_INPUT_BYTES", "check_duplicate_keys", "decode", "encode", "load", "load_snapshot", "parse_decision",
           "parse_mckp", "parse_snapshot", "read_bytes", "read_limited", "write_atomic"]

#: Largest input accepted (bytes, 512 MiB): a snapshot of a million jobs is about 270 MB. Larger inputs, and
#: endless streams such as ``/dev/zero``, are refused after reading at most this much plus one chunk.
MAX_INPUT_BYTES = 512 * 2**20

_CHUNK = 8 * 2**20


def _too_large(name: str) -> InputError:
    return InputError("$", f"input larger than the {MAX_INPUT_BYTES // 2**20} MiB limit (io.MAX_INPUT_BYTES)", name)


def read_limited(fh, name: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """All bytes of the binary stream ``fh``, refused with :class:`InputError` naming ``name`` once more than
    ``limit`` bytes come (read in chunks: memory stays within ``limit`` plus one chunk, whatever the stream)."""
    parts: list[bytes] = []
    size = 0
    while True:
        part = fh.read(min(_CHUNK, limit + 1 - size))
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > limit:
            raise _too_large(name)


def read_bytes(source: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Bytes of a file, or of standard input for ``-`` (a closed or unreadable stream is bad input), at most
    ``limit`` (:data:`MAX_INPUT_BYTES`) of them: a larger input is refused naming the file, a regular file by
    its size before any reading."""
    if source == "-":
        if sys.stdin is None:
            raise InputError("$", "cannot read: standard input is closed", "<stdin>")
        try:
            return read_limited(sys.stdin.buffer, "<stdin>", limit)
        except InputError:
            raise
        except (OSError, ValueError) as err:
            raise InputError("$", f"cannot read standard input: {getattr(err, 'strerror', None) or err}",
                             "<stdin>") from None
    try:
        with open(source, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise _too_large(source)
            return read_limited(fh, source, limit)
    except OSError as err:
        raise InputError("$", f"cannot read: {err.strerror or err}", source) from None


def parse_decision(data: bytes) -> Decision:
    """Decode a decision (types only; :mod:`solver.check` judges the rules)."""
    return decode(data, Decision)


def parse_mckp(data: bytes) -> MCKPInstance:
    """Decode an MCKP instance and check each class's weights and values pair up."""
    inst = decode(data, MCKPInstance)
    for i, cls in enumerate(inst.classes):
        if len(cls.weights) != len(cls.values):
            raise InputError(f"classes[{i}].values",
                             f"has {len(cls.values)} items but weights has {len(cls.weights)}")
        for k, v in enumerate(cls.values):
            if not math.isfinite(v):
                raise InputError(f"classes[{i}].values[{k}]", "must be a finite number")
    return inst


def load(source: str, parse):
    """Read ``source`` (a path or ``-``) and parse it, attaching the file name to any :class:`InputError`."""
    name = "<stdin>" if source == "-" else source
    try:
        return parse(read_bytes(source))
    except InputError as err:
        raise err.with_source(name) from None


def load_snapshot(source: str) -> Snapshot:
    """Read and validate a snapshot from a path (``-``: standard input); :class:`InputError` names the file."""
    return load(source, parse_snapshot)


_encoder = msgspec.json.Encoder(order="sorted", enc_hook=numpy_scalar)


def encode(obj) -> bytes:
    """Canonical JSON bytes: sorted keys, values in canonical form (:func:`lyra_solver.types.canonical`: equal
    objects give equal bytes, defaults omitted whatever their origin, numpy scalars as Python numbers),
    newline-terminated."""
    return _encoder.encode(canonical(obj)) + b"\n"


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (``-``: standard output) all at once: never a partial file.

    A regular file (or a new one) is written through a unique temporary file in the same directory and
    renamed over the target atomically, so concurrent writers leave one whole output; a symbolic link is
    followed (its target is replaced, never the link). A target that is not a regular file (a device, a
    FIFO) is written to directly. Environment failures (full disk, closed stream) raise :class:`InputError`
    naming the file or stream.
    """
    if path == "-":
        _write_stdout(data)
        return
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise InputError("$", f"cannot write the output: {err.strerror or err}", path) from None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise InputError("$", "cannot write the output: it is a directory", path)
            with open(target, "wb") as fh:  # a device or FIFO: never replaced by a regular file
                fh.write(data)
            return
        _replace_atomically(target, data, mode)
    except OSError as err:
        raise InputError("$", f"cannot write the output: {err.strerror or err}", path) from None


def _replace_atomically(target: str, data: bytes, mode: int | None) -> None:
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is None:  # a new file gets the usual permissions (mkstemp makes it 0600)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_stdout(data: bytes) -> None:
    """Standard output, all of ``data``; a closed or full stream is :class:`InputError` on ``<stdout>``."""
    if sys.stdout is None:
        raise InputError("$", "cannot write: standard output is closed", "<stdout>")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as err:
        raise InputError("$", f"cannot write: {getattr(err, 'strerror', None) or err}", "<stdout>") from None
