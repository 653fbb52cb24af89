"""The README and the guides in docs/: every relative link resolves, and every ``aioseed`` command shown
in a code block parses with the real CLI (a renamed flag or a typo in a guide fails here)."""

from __future__ import annotations

import itertools
import pathlib
import re
import shlex

import pytest

from aioseed.cli import parse

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<"}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def anchors(path: pathlib.Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def links(path: pathlib.Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", path.read_text()))  # code is not a link
    return [a or b for a, b in LINK.findall(text)]


def commands(path: pathlib.Path) -> list[list[str]]:
    """The ``aioseed ...`` (or ``.venv/bin/aioseed ...``) commands in the file's code blocks, as argv
    after the program name; ``make run ARGS="..."`` counts as ``aioseed run ...``."""
    found: list[list[str]] = []
    for block in FENCE.findall(path.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            try:
                tokens = list(lexer)
            except ValueError:  # not a shell line (a TOML or Python block)
                continue
            part: list[str] = []
            for token in [*tokens, ";"]:
                if token not in SHELL_OPERATORS:
                    part.append(token)
                    continue
                words = list(itertools.dropwhile(lambda w: re.fullmatch(r"[A-Z_]+=.*", w), part))  # FOO=1 cmd
                if words and (words[0] == "aioseed" or words[0].endswith("/aioseed")):
                    found.append(words[1:])
                elif words[:2] == ["make", "run"]:
                    args = next((w.partition("=")[2] for w in words[2:] if w.startswith("ARGS=")), "")
                    found.append(["run", *shlex.split(args)])
                part = []
    return found


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) < 250


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: pathlib.Path) -> None:
    broken = []
    for link in links(path):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append(link)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(link)
    assert not broken, f"{path.name}: {broken}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_shown_parses(path: pathlib.Path, tmp_path: pathlib.Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in commands(path):
        if argv[:1] in (["--version"], ["--help"]) or "--help" in argv:
            continue
        for flag, value in zip(argv, argv[1:]):
            if flag == "--config":  # a file the guide has the reader write first
                pathlib.Path(value).parent.mkdir(parents=True, exist_ok=True)
                pathlib.Path(value).touch()
        try:
            parse(argv)
        except SystemExit as exc:
            pytest.fail(f"{path.name}: `aioseed {shlex.join(argv)}` does not parse ({exc})")


def test_the_command_finder_sees_commands_and_skips_the_rest(tmp_path: pathlib.Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\n# a comment\nFOO=1 .venv/bin/aioseed actor --learner A:8686 \\\n  --num-envs 4  # trailing\n"
        "make run ARGS=\"--num-actors 1\"\nls | aioseed --version\n```\n```toml\ncommand = \"run\"\n```\n"
        "[a guide](docs/a.md), `f(x)[0](y)` is code\n"
    )
    assert commands(page) == [["actor", "--learner", "A:8686", "--num-envs", "4"], ["run", "--num-actors", "1"], ["--version"]]
    assert links(page) == ["docs/a.md"]
    assert slug("Acting modes: how far `acting` runs (V-trace)") == "acting-modes-how-far-acting-runs-v-trace"
