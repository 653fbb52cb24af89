"""Mistakes of the user's: a flag, a file, an id or a port that cannot work. ``aioseed`` prints one line
for them (what was wrong and what to do) and exits with status 2; any other exception is a bug of
aioseed's and keeps its traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """Something the user gave is wrong; the message says what, and what to do instead (``aioseed`` prints
    it as one line). Raised as one of the kinds below, which are also the built-in error they stand for."""


class InvalidInput(UserError, ValueError):
    """A value, id, key or file content that cannot work."""


class UnsupportedEnv(UserError, TypeError):
    """An env whose observation or action space aioseed cannot serve."""


class MissingFile(UserError, FileNotFoundError):
    """A file or directory the user named is not there."""


class PortTaken(UserError, OSError):
    """An address to listen on that another process holds, or that is not this machine's."""


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> str:
    """``; did you mean A, B or C?`` for the choices closest to ``word``, else "."."""
    matches = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    if not matches:
        return "."
    shown = matches[0] if len(matches) == 1 else f"{', '.join(matches[:-1])} or {matches[-1]}"
    return f"; did you mean {shown}?"
