"""The one exception type for bad input: a field path and what is wrong with it."""
from __future__ import annotations


class InputError(ValueError):
    """Bad input: ``path`` is a field path such as ``jobs[3].min_workers`` (``$`` for the document)."""

    def __init__(self, path: str, problem: str, source: str | None = None) -> None:
        self.path = path or "$"
        self.problem = problem
        self.source = source
        super().__init__(self.line())

    def line(self) -> str:
        """One line: ``FILE: PATH: PROBLEM`` (the file only when known)."""
        head = f"{self.source}: " if self.source else ""
        return f"{head}{self.path}: {self.problem}"

    def with_source(self, source: str) -> InputError:
        return InputError(self.path, self.problem, source)
