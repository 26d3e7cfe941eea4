"""The code blocks of README.md and every markdown file under docs/.

A ```python (or ```py) block is an example that must run as a script, unless it is marked:
`no-run` in its info string (```python no-run) or an `<!-- no-run -->` comment on the line
before it. The marker is for shell-like or intentionally partial snippets only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = frozenset(("python", "py", "python3"))
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_NO_RUN_COMMENT = re.compile(r"^\s*<!--\s*no-run\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """1-based line of the opening fence."""
    info: str
    code: str
    marked_no_run: bool

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def runs(self) -> bool:
        return self.language in PYTHON and not self.marked_no_run

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence, info = match.group("fence"), match.group("info").strip()
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence[0] * len(fence)) and not lines[end].strip().strip(fence[0])
        ):
            body.append(lines[end])
            end += 1
        marked = "no-run" in info.split() or bool(_NO_RUN_COMMENT.match(previous))
        found.append(Block(path, index + 1, info, "\n".join(body) + "\n", marked))
        index = end + 1
    return found


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [block for path in markdown_files(root) for block in blocks_of(path)]
