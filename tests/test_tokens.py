"""Named console tokens (``--console.tokens-file``): what a line means, and each mistake named by its line."""

from __future__ import annotations

import pytest

from aioseed.errors import InvalidInput, MissingFile
from aioseed.tokens import read_named_tokens


def test_names_tokens_comments_and_a_hash_inside_a_token(tmp_path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# who steers\n\nalice   abc#defghijklmnopqrstu   # her laptop\nbob\tbobs-token-0123456789\n")
    assert read_named_tokens(path, "--console.tokens-file") == {"abc#defghijklmnopqrstu": "alice", "bobs-token-0123456789": "bob"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice\n", "line 1: expected NAME TOKEN"),
        ("al ice token-0123456789abcdef\n", "line 1: expected NAME TOKEN"),
        ("alice short\n", "line 1: alice's token is shorter than 16 characters"),
        ("alice token-0123456789abcdef\nalice other-0123456789abcdef\n", "line 2: the name alice is given twice"),
        ("alice token-0123456789abcdef\nbob token-0123456789abcdef\n", "line 2: the token is given twice"),
        ("local token-0123456789abcdef\n", "line 1: the name local is given twice"),
        ("# nobody\n", "no NAME TOKEN line"),
    ],
)
def test_each_mistake_names_its_line(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=message):
        read_named_tokens(path, "--console.tokens-file")


def test_a_missing_file_is_named(tmp_path) -> None:
    with pytest.raises(MissingFile, match="--console.tokens-file .*: no such file"):
        read_named_tokens(tmp_path / "nope", "--console.tokens-file")
