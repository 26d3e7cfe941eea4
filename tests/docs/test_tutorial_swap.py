"""The tutorial's advice holds: replacing a step's `model = MockModel([...])` script with another
model (a `"provider/model"` string, the embedded model) leaves a script that runs. The lines
reading `model.calls` (what a scripted model was sent) must not break it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .markdown_blocks import ROOT, blocks_of

STEPS = [b for b in blocks_of(ROOT / "docs" / "tutorial.md") if b.runs and "model = MockModel(" in b.code]
ONE_LINE = re.compile(r"^model = MockModel\(.*\)$", re.M)
SPREAD = re.compile(r"^model = MockModel\($.*?^\)$", re.M | re.S)


def _swapped(code: str, model: str) -> str:
    swapped, count = ONE_LINE.subn(f"model = {model}", code, count=1)
    if not count:
        swapped, count = SPREAD.subn(f"model = {model}", code, count=1)
    assert count == 1, "the step's script is not a `model = MockModel(...)` assignment"
    return swapped


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "step.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_tutorial_has_scripted_steps() -> None:
    assert len(STEPS) >= 3


@pytest.mark.parametrize("block", STEPS, ids=[b.name for b in STEPS])
def test_a_step_runs_with_another_model_in_place_of_the_script(block: object, tmp_path: Path) -> None:
    code = _swapped(block.code, "EchoModel()")  # type: ignore[attr-defined]
    code = "from sluicegate.testing.echo_model import EchoModel\n" + code
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None, reason="the `local` extra is not installed"
)
@pytest.mark.timeout(600)
def test_step_3_on_the_embedded_model_as_the_tip_says(tmp_path: Path) -> None:
    (step,) = [b for b in STEPS if "Memory(" in b.code and "tool" not in b.code]
    done = _run(_swapped(step.code, '"local/smollm2-135m"'), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()
