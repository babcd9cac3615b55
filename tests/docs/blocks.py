"""The shell blocks of berth's Markdown docs, and running them the way a reader would.

A fenced block whose info string is ``sh`` or ``bash`` is a command a reader types; anything only shown
uses ``console``, ``text``, ``yaml``, ``json``... The line directly before a block may say how it runs:

* ``<!-- not-run: REASON -->``: it cannot run here (it builds an image, needs a real cloud cluster, runs
  for an hour); the doc test lists it with the reason instead.
* ``<!-- background: URL -->``: a server the reader leaves running in another terminal. It is started in
  the background, the next blocks run once ``URL`` answers (any HTTP status), and it is stopped with
  SIGTERM after the file's last block.
* ``<!-- from: PATH -->`` (before a block of any kind): the block is an excerpt of the repository file
  PATH, verbatim, so code shown in the docs is code that is tested.

Every other block runs to completion with ``bash -euo pipefail`` and must exit 0.

Standard library only: :mod:`docs.run_blocks` runs these inside a private network namespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHELL_INFO = frozenset({"sh", "bash"})
_FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
_DIRECTIVE = re.compile(r"^<!--\s*(not-run|background|from):\s*(.*?)\s*-->\s*$")


NOT_RUN: list[Block] = []
"""The not-run blocks the doc test met in this session, for its terminal summary (tests/docs/conftest.py)."""


class DocError(ValueError):
    """A doc file breaks the block convention (an unclosed fence, a directive before a non-shell block)."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its info string, its text, and its directive (if any)."""

    path: Path
    line: int
    info: str
    text: str
    mode: str = "run"  # "run", "not-run", "background" or "from"
    argument: str = ""  # the not-run reason, the URL a background block waits for, or the file excerpted

    @property
    def where(self) -> str:
        """``FILE:LINE`` relative to the repository."""
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"

    @property
    def is_shell(self) -> bool:
        """A block the doc test executes (or lists as not run)."""
        return self.info in SHELL_INFO


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def parse(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the directive on the line before it."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        marker, info = fence.group(1), fence.group(2)
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(marker):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise DocError(f"{path.relative_to(REPO_ROOT)}:{start + 1}: the ``` block is never closed")
        i += 1
        directive = _DIRECTIVE.match(lines[start - 1]) if start > 0 else None
        if directive and directive.group(1) != "from" and info not in SHELL_INFO:
            raise DocError(
                f"{path.relative_to(REPO_ROOT)}:{start + 1}: <!-- {directive.group(1)} --> before a "
                f"{info or 'plain'} block (only sh/bash blocks run)"
            )
        mode, argument = (directive.group(1), directive.group(2)) if directive else ("run", "")
        if mode == "not-run" and not argument:
            raise DocError(f"{path.relative_to(REPO_ROOT)}:{start + 1}: <!-- not-run: --> needs a reason")
        blocks.append(Block(path, start + 1, info, "\n".join(body) + "\n", mode, argument))
    return blocks


def shell_blocks(paths: list[Path] | None = None) -> list[Block]:
    """The sh/bash blocks of ``paths`` (default: :func:`doc_files`)."""
    return [b for p in paths or doc_files() for b in parse(p) if b.is_shell]
