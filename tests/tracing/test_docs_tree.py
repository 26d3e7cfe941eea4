"""docs/observability.md shows the span tree its example prints: keep the two in step."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def test_the_documented_span_tree_is_what_the_example_prints(tmp_path: Path) -> None:
    text = PAGE.read_text()
    example = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    shown = re.search(r"prints:\n\n```text\n(.*?)```", text, re.DOTALL)
    assert example is not None and shown is not None
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(script), run_name="__main__")
    assert printed.getvalue() == shown.group(1)
