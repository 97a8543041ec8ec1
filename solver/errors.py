"""The one exception type for bad input: a field path and what is wrong with it."""
from __future__ import annotations


def escape(text: str) -> str:
    """``text`` on one line with no terminal control codes: each non-printable character (newline, escape,
    other controls) becomes its ``repr``-style escape (``\\n``, ``\\x1b``); printable text is unchanged."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


#: Longest part (file name, field path, problem) of an error line, in characters after escaping: a quoted value
#: of megabytes (an unknown id) would otherwise make a line of megabytes.
MAX_PART = 400


def shorten(text: str, limit: int = MAX_PART) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and end around ``...`` (``limit`` in all)."""
    if len(text) <= limit:
        return text
    keep = (limit - 3) // 2
    return f"{text[:keep]}...{text[len(text) - keep:]}"


class InputError(ValueError):
    """Bad input: ``path`` is a field path such as ``jobs[3].min_workers`` (``$`` for the document)."""

    def __init__(self, path: str, problem: str, source: str | None = None) -> None:
        self.path = path or "$"
        self.problem = problem
        self.source = source
        super().__init__(self.line())

    def line(self) -> str:
        """One line: ``FILE: PATH: PROBLEM`` (the file only when known), each part escaped and at most
        :data:`MAX_PART` characters (:func:`shorten`)."""
        head = f"{shorten(escape(self.source))}: " if self.source else ""
        return f"{head}{shorten(escape(self.path))}: {shorten(escape(self.problem))}"

    def with_source(self, source: str) -> InputError:
        return InputError(self.path, self.problem, source)
