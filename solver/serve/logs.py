"""Logging of ``lyra-solver serve``: every record one JSON line on standard error (access logs included)."""
from __future__ import annotations

import json
import logging
import sys
import time

from lyra_solver.logsetup import level_of

__all__ = ["JsonFormatter", "configure"]


class JsonFormatter(logging.Formatter):
    """``{"time": ..., "level": ..., "logger": ..., "message": ..., **fields}`` on one line (``ensure_ascii``: no
    newline or control character of a request reaches the log raw). ``extra={"fields": {...}}`` adds keys."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.gmtime(record.created)
        doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            doc.update(fields)
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=True, default=str)


def configure(verbosity: int) -> None:
    """Send every record to standard error as JSON. ``verbosity``: -1 (``-q``) errors only; 0 (default) access
    lines and the service's lifecycle, the engine's warnings; 1 (``-v``) the engine's steps too; 2 (``-vv``)
    debug."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level_of(verbosity))
    service = logging.ERROR if verbosity < 0 else logging.DEBUG if verbosity > 1 else logging.INFO
    for name in ("lyra_solver.serve", "uvicorn.error"):
        logging.getLogger(name).setLevel(service)
    logging.getLogger("uvicorn.access").setLevel(logging.CRITICAL + 1)
