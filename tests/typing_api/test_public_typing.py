"""sluicegate is typed for its users: `mypy --strict` accepts a user-style script written
against the public API (inferring `result.object` from the schema) and every docs example, and
rejects a misspelt call option. mypy reads the installed package, so this also proves the
`py.typed` marker ships."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docs.markdown_blocks import ROOT, all_blocks

CASES = Path(__file__).parent / "cases"


def mypy(*paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *map(str, paths),
        ],
        cwd=cwd,  # outside the repository: sluicegate is found installed, through its py.typed
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_py_typed_is_shipped() -> None:
    import sluicegate

    assert (Path(sluicegate.__file__).parent / "py.typed").is_file()


def test_user_script_and_docs_examples_type_check(tmp_path: Path) -> None:
    files = [CASES / "user_script.py"]
    for index, block in enumerate(b for b in all_blocks() if b.runs):
        path = tmp_path / f"docs_example_{index}.py"
        path.write_text(f"# {block.name}\n{block.code}", encoding="utf-8")
        files.append(path)
    result = mypy(*files, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_misspelt_option_is_a_type_error(tmp_path: Path) -> None:
    result = mypy(CASES / "typo_option.py", cwd=tmp_path)
    assert result.returncode == 1
    assert 'Unexpected keyword argument "max_step"' in result.stdout
    assert 'did you mean "max_steps"' in result.stdout
    assert "typo_option.py:12: error: No overload variant" in result.stdout  # max_steps="3"


def test_lazily_imported_names_keep_their_types(tmp_path: Path) -> None:
    result = mypy(CASES / "lazy_exports.py", cwd=tmp_path)
    assert result.returncode == 1
    assert 'lazy_exports.py:9: error: Argument "limit" to "TokenLimiterProcessor"' in result.stdout
    assert 'lazy_exports.py:10: error: Argument 1 to "OpenAICompatible"' in result.stdout
    assert "lazy_exports.py:12: error: Incompatible types in assignment" in result.stdout
