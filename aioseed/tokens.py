"""Shared secrets given as files (``--server.token-file``, ``--token-file``, ``--console.tokens-file``): out of the
process list and the shell's history, unlike a token flag."""

from __future__ import annotations

import pathlib
import re

from aioseed.errors import InvalidInput, MissingFile


def read_token(path: pathlib.Path, flag: str) -> str:
    """The token in ``path``: its first line, stripped. A UserError naming ``flag`` when the file is missing or empty."""
    text = _read(path, flag, "the token")
    token = text.splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise InvalidInput(f"{flag} {path}: the file is empty; put the token on its first line")
    return token


def _read(path: pathlib.Path, flag: str, what: str) -> str:
    """``path``'s text; a UserError naming ``flag`` when it is missing or cannot be read."""
    try:
        return path.read_text()
    except FileNotFoundError:
        raise MissingFile(f"{flag} {path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{flag} {path}: cannot read {what} ({type(exc).__name__})") from None


def token_of(token: str | None, token_file: pathlib.Path | None, flag: str) -> str | None:
    """``token``, or the one in ``token_file`` (at most one of them is set), or None."""
    return read_token(token_file, flag) if token_file is not None else token


NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
COMMENT = re.compile(r"(?:^|\s)#")
SHORTEST = 16
"""Characters a named token needs at least (a guessable one would open the console)."""


def read_named_tokens(path: pathlib.Path, flag: str) -> dict[str, str]:
    """Named tokens in ``path``: ``NAME TOKEN`` a line (blank lines and ``#`` comments skipped) -> {token: name}. A
    UserError naming ``flag`` and the line for a missing file, a malformed line, a short token or a repeated name or
    token."""
    text = _read(path, flag, "the tokens")
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = COMMENT.split(line, 1)[0].split()  # a token may hold "#": a comment starts a line or follows a space
        if not fields:
            continue
        where = f"{flag} {path} line {number}"
        if len(fields) != 2 or not NAME.fullmatch(fields[0]):
            raise InvalidInput(f"{where}: expected NAME TOKEN (a name of letters, digits and _.@-, then the token)")
        name, token = fields
        if len(token) < SHORTEST:
            raise InvalidInput(f"{where}: {name}'s token is shorter than {SHORTEST} characters")
        if name in tokens.values() or name == "local" or token in tokens:
            raise InvalidInput(f"{where}: {'the token' if token in tokens else f'the name {name}'} is given twice (local names the console's own token)")
        tokens[token] = name
    if not tokens:
        raise InvalidInput(f"{flag} {path}: no NAME TOKEN line")
    return tokens
