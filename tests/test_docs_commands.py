"""Every ``fincon`` command the docs show parses, and every local link resolves.

Docs rot first where they are most read: a flag renamed in the CLI survives
for months in a README example. This test reads every fenced code block of
README.md, CONTRIBUTING.md and docs/*.md, takes each line that starts with
``fincon `` (after an optional ``$ `` prompt and ``VAR=value`` environment
assignments; ``\\``-continued lines joined, a trailing ``# comment`` dropped)
and parses it with the real argparse parser of the console script
(:func:`fincon.cli.main.build_parser`), so a stale sub-command, flag or
choice fails here with the file, the line and argparse's own message.
Nothing is executed: ``parse_args`` only, no command's ``func``.

Blocks fenced as ``text`` are program output (the demo's table prints a line
``fincon LLM usage: ...``), not commands, and are skipped; every other block
(bash, console, none) is checked.

``fincon eval NAME``'s flags are parsed by the evaluation's own parser,
which the CLI builds with the others.

It also checks that every relative ``](path)`` link of those files names a
file or directory that exists, and every ``#section`` a heading of that file.

The two maps of the code, CONTRIBUTING.md and docs/architecture.md, are held
to the tree as well (:func:`stale_names`): every path they name in backticks
(``fincon/agents/team/strategy.py``, ``agents/roles/``) exists, every bare
file name (``brains.py``) exists in a folder its paragraph or table row
names (``fincon/agents/``, the room ``agents``, the folder of a file it
names), and every registry they send a reader to (``PROTOCOLS`` in
``fincon/agents/protocols/__init__.py``) is assigned in that module. A
module moved or renamed fails here, not in a reader's search.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from fincon.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs" / "notes").glob("*.md"),
    ]
)
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
OUTPUT_LANGS = {"text"}
ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(\"[^\"]*\"|'[^']*'|\S*)\s+")
LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Command:
    file: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def _strip_comment(text: str) -> str:
    """The command without a trailing ``# comment`` (a ``#`` inside quotes stays)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return shlex.join(list(lexer))
    except ValueError:  # unbalanced quotes: let parse() report it
        return text


def commands_in(path: Path) -> list[Command]:
    """The ``fincon ...`` command lines of the fenced code blocks of ``path``."""
    found: list[Command] = []
    fence: str | None = None
    lang = ""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i]
        m = FENCE.match(raw)
        if fence is None and m:
            fence, lang = m.group(1), m.group(2).lower()
            i += 1
            continue
        if fence is not None and raw.strip().startswith(fence[0] * 3) and raw.strip().strip(fence[0]) == "":
            fence = None
            i += 1
            continue
        if fence is None or lang in OUTPUT_LANGS:
            i += 1
            continue
        start = i
        text = raw.strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        text = text.removeprefix("$ ").lstrip()
        while ENV_ASSIGN.match(text):
            text = ENV_ASSIGN.sub("", text, count=1)
        if text.startswith("fincon "):
            found.append(Command(path, start + 1, _strip_comment(text)))
    return found


def parse(parser: argparse.ArgumentParser, command: str) -> str | None:
    """argparse's error for ``command`` (None if it parses); nothing runs."""
    try:
        argv = shlex.split(command)[1:]
    except ValueError as exc:
        return f"cannot split the command: {exc}"
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):  # 0: a documented `--help`
            return err.getvalue().strip() or f"exit status {exc.code}"
    return None


def test_the_docs_show_commands():
    """The extraction finds commands in every file that has them: a fence
    the reader misses would pass everything silently."""
    counts = {p.name: len(commands_in(p)) for p in DOCS}
    assert counts["README.md"] >= 10, counts
    assert counts["CONTRIBUTING.md"] >= 1, counts
    assert sum(counts.values()) >= 60, counts


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_documented_command_parses(path):
    parser = build_parser()
    errors = [f"{c.where()}: {c.text}\n    {msg}" for c in commands_in(path) if (msg := parse(parser, c.text))]
    assert not errors, "stale commands in the docs:\n" + "\n".join(errors)


def test_a_made_up_flag_fails():
    """The check can fail: an unknown flag, sub-command or choice is an error
    that names it, also in an evaluation's own flags."""
    parser = build_parser()
    assert "--no-such-flag" in parse(parser, "fincon backtest --ticker TSLA --no-such-flag")
    assert "invalid choice" in parse(parser, "fincon simulate --ticker TSLA")
    assert "invalid choice" in parse(parser, "fincon backtest --brain oracle")
    assert "--no-such-flag" in parse(parser, "fincon eval numeric --brain rules --no-such-flag")
    assert parse(parser, "fincon backtest --ticker TSLA --strategy markowitz --fill next-open") is None


def test_extraction_rules(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "fincon backtest --not-in-a-block\n"
        "```bash\n"
        "$ fincon backtest --ticker TSLA \\\n"
        "    --strategy markowitz   # a comment with --fake\n"
        "FINCON_CACHE_DIR=/tmp/c fincon transcribe a.ogg\n"
        "make demo\n"
        "```\n"
        "```text\n"
        "fincon LLM usage: 60 calls\n"
        "```\n"
        "  ```\n"
        "  fincon plot runs/a --out 'a b.png'\n"
        "  ```\n",
        encoding="utf-8",
    )
    assert [(c.line, c.text) for c in commands_in(doc)] == [
        (3, "fincon backtest --ticker TSLA --strategy markowitz"),
        (5, "fincon transcribe a.ogg"),
        (12, "fincon plot runs/a --out 'a b.png'"),
    ]


def test_the_check_is_fast():
    t0 = time.perf_counter()
    parser = build_parser()
    for path in DOCS:
        for c in commands_in(path):
            parse(parser, c.text)
    assert time.perf_counter() - t0 < 5.0


def anchors(path: Path) -> set[str]:
    """The ``#anchors`` GitHub makes of the headings of a markdown file
    (lower case, punctuation dropped, spaces to ``-``, repeats numbered)."""
    seen: dict[str, int] = {}
    fence = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = FENCE.match(line)
        if m:
            fence = None if fence else m.group(1)
            continue
        if fence or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        if n:
            slug = f"{slug}-{n}"
        seen.setdefault(slug, 1)
    return set(seen)


def broken_links(path: Path) -> list[str]:
    """Relative links of ``path`` to a missing file, or to a ``#section``
    that is not a heading of the markdown file they name."""
    broken = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            local, _, anchor = target.partition("#")
            file = (path.parent / local) if local else path
            if not file.exists():
                broken.append(f"{path.name}:{n}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{path.name}:{n}: {target} (no such heading)")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_exists(path):
    broken = broken_links(path)
    assert not broken, f"broken links in {path.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_a_broken_link_fails(tmp_path):
    (tmp_path / "b.md").write_text("# Run directory\n\n## Settings reference (`LLMSettings`)\n", encoding="utf-8")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md#run-directory) [ok](b.md#settings-reference-llmsettings) [ok](#top)\n"
        "# Top\n[gone](c.md) [gone](b.md#no-such-part) [web](https://example.com/x)\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == ["a.md:3: c.md (no such file)", "a.md:3: b.md#no-such-part (no such heading)"]


CODE_MAPS = [ROOT / "CONTRIBUTING.md", ROOT / "docs" / "architecture.md"]
TICKED = re.compile(r"`([^`\s]+)`")
BARE_FILE = re.compile(r"^[\w.-]+\.(py|txt)$")
A_PATH = re.compile(r"^[\w.*-]+(/[\w.*-]*)+$")
PLACEHOLDER = re.compile(r"\b[A-Z]{2,}\b")  # docs/recorded/NAME-TSLA-DAY.sqlite
REGISTRY = re.compile(r"`([A-Z][A-Z0-9_]+)`\s+(?:in\s+|\()`(fincon/[\w/]+\.py)`")


def blocks(path: Path) -> list[tuple[int, str]]:
    """The paragraphs and table rows of ``path`` outside fenced code, each
    with its first line number (a table row is a block of its own)."""
    found: list[tuple[int, str]] = []
    lines: list[str] = []
    start, fence = 0, None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines() + [""], 1):
        m = FENCE.match(line)
        if m:
            fence = None if fence else m.group(1)
        if fence or m or not line.strip() or line.lstrip().startswith("|"):
            if lines:
                found.append((start, " ".join(lines)))
            lines = []
            if line.lstrip().startswith("|") and not fence and not m:
                found.append((n, line))
            continue
        if not lines:
            start = n
        lines.append(line)
    return found


def _exists(path: Path) -> bool:
    return any(path.parent.glob(path.name)) if "*" in path.name else path.exists()


def stale_names(path: Path, root: Path = ROOT) -> list[str]:
    """Paths, file names and registries ``path`` names that the tree lacks."""
    stale = []
    for n, text in blocks(path):
        ticked = TICKED.findall(text)
        # the folders this block speaks of: those it names, rooms (`agents` is
        # fincon/agents/) and the folders of the files it names
        dirs = [root, root / "fincon"]
        for t in ticked:
            for base in list(dirs):
                named = base / t.strip("/")
                folder = named if named.is_dir() else named.parent if "/" in t and named.is_file() else None
                if t.strip("/") and folder is not None and folder not in dirs:
                    dirs.append(folder)
        for t in ticked:
            if PLACEHOLDER.search(t) or t.startswith(("http", ".venv/")):
                continue
            if A_PATH.match(t) or BARE_FILE.match(t):
                if not any(_exists(d / t.rstrip("/")) for d in dirs):
                    stale.append(f"{path.name}:{n}: `{t}` (no such file or folder)")
        for name, module in REGISTRY.findall(text):
            file = root / module
            if not file.is_file():
                continue  # reported above
            if not re.search(rf"^{name}\b[^=\n]*=", file.read_text(encoding="utf-8"), re.M):
                stale.append(f"{path.name}:{n}: `{name}` is not assigned in {module}")
    return stale


@pytest.mark.parametrize("path", CODE_MAPS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_maps_name_what_the_tree_holds(path):
    stale = stale_names(path)
    assert not stale, f"stale names in {path.relative_to(ROOT)}:\n" + "\n".join(stale)


def test_a_moved_module_fails(tmp_path):
    """The check can fail: a module that became a package, a bare name no
    folder of its paragraph holds, a registry the module no longer has."""
    (tmp_path / "fincon" / "agents" / "team").mkdir(parents=True)
    (tmp_path / "fincon" / "agents" / "brains.py").write_text("", encoding="utf-8")
    (tmp_path / "fincon" / "cli").mkdir()
    (tmp_path / "fincon" / "cli" / "main.py").write_text("COMMANDS = [\n]\n", encoding="utf-8")
    doc = tmp_path / "map.md"
    doc.write_text(
        "Inside `fincon/agents/`: `team/` and `brains.py`, `team.py`.\n\n"
        "| `agents` | `brains.py`, `roles/` |\n\n"
        "Listed in `COMMANDS` in `fincon/cli/main.py`, `EVALS` in `fincon/cli/main.py`.\n"
        "```bash\nls fincon/nothing.py `gone.py`\n```\n",
        encoding="utf-8",
    )
    assert stale_names(doc, tmp_path) == [
        "map.md:1: `team.py` (no such file or folder)",
        "map.md:3: `roles/` (no such file or folder)",
        "map.md:5: `EVALS` is not assigned in fincon/cli/main.py",
    ]
