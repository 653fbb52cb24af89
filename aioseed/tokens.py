"""Shared secrets given as files (``--server.token-file``, ``--token-file``): out of the process list and the
shell's history, unlike a token flag."""

from __future__ import annotations

import pathlib

from aioseed.errors import InvalidInput, MissingFile


def read_token(path: pathlib.Path, flag: str) -> str:
    """The token in ``path``: its first line, stripped. A UserError naming ``flag`` when the file is missing or empty."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise MissingFile(f"{flag} {path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{flag} {path}: cannot read the token ({type(exc).__name__})") from None
    token = text.splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise InvalidInput(f"{flag} {path}: the file is empty; put the token on its first line")
    return token


def token_of(token: str | None, token_file: pathlib.Path | None, flag: str) -> str | None:
    """``token``, or the one in ``token_file`` (at most one of them is set), or None."""
    return read_token(token_file, flag) if token_file is not None else token
