"""Every complete example in docs/ (a Python block that runs itself with `asyncio.run`) runs."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for index, block in enumerate(BLOCK.findall(page.read_text())):
            if "asyncio.run(" in block:
                found.append((f"{page.name}#{index}", block))
    return found


@pytest.mark.parametrize(("where", "code"), _examples(), ids=[w for w, _ in _examples()])
def test_doc_example_runs(where: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")
