"""The size rule of `agent/`, `processors/` and `durable/`: no module over 600 lines, no
function or method over 120 (decorators included). A module or function past it holds more
than one concept or step; split it by concept or extract named steps instead of raising the
bound."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "sluicegate"
PACKAGES = ("agent", "processors", "durable")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120


def oversized(path: Path, root: Path = SRC) -> list[str]:
    """What in the module at `path` breaks the rule, one line each (path under `root`, name,
    size)."""
    source = path.read_text(encoding="utf-8")
    where = path.relative_to(root).as_posix()
    found: list[str] = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{where}: {lines} lines (max {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            span = (node.end_lineno or node.lineno) - start + 1
            if span > MAX_FUNCTION_LINES:
                found.append(f"{where}:{node.lineno} {node.name}(): {span} lines (max {MAX_FUNCTION_LINES})")
    return found


def modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (SRC / package).rglob("*.py"))


def test_the_rule_sees_every_package() -> None:
    for package in PACKAGES:
        assert any(p.is_relative_to(SRC / package) for p in modules()), package


def test_no_module_or_function_over_the_bound() -> None:
    offenders = [line for path in modules() for line in oversized(path)]
    assert not offenders, "over the size rule (split by concept):\n" + "\n".join(offenders)


def test_the_rule_catches_a_long_module_and_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"@decorator\ndef long():\n{body}\n" + "\n" * MAX_MODULE_LINES
    path = tmp_path / "agent" / "probe.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    found = oversized(path, tmp_path)
    assert any("agent/probe.py:" in line and "lines (max 600)" in line for line in found)
    assert any("long(): 122 lines" in line for line in found)
