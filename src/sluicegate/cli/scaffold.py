"""`sluicegate init NAME`: a new app folder that `sluicegate dev` serves at once.

It holds one guarded agent on the embedded model (no key: the `local` extra), memory in a
SQLite file beside it (conversations, and runs waiting on a person once you give it a tool with
`require_approval=True`, survive a restart and can be decided from another command), a test that
runs offline on a scripted model, and a README with the next commands. No tool: the embedded
model is too small to call tools sensibly. Existing files are never overwritten.
"""

from __future__ import annotations

from pathlib import Path

from sluicegate.errors import ConfigurationError

APP = '''\
"""{name}: a support agent guarded by sluicegate.

    sluicegate dev app.py            # the studio at http://127.0.0.1:4111/studio
    sluicegate run app.py "hello"    # one answer in the terminal
    sluicegate chat app.py           # a conversation
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import RegexFilter
from sluicegate.storage import SQLiteStore

HERE = Path(__file__).resolve().parent
storage = SQLiteStore(str(HERE / "app.db"))


def build_agent(model: Any = "local/smollm2-135m") -> Agent:
    """The agent; a test passes a scripted model (`sluicegate.testing.MockModel`)."""
    # One guard on both sides: personal data and secrets are redacted in what the user sends
    # (before the model sees it) and in what the model answers (as it streams).
    guard = RegexFilter(presets=["pii", "secrets"], strategy="redact")
    return Agent(
        name="support",
        description="Answers customers; personal data never reaches the model.",
        instructions="You are a short, friendly support assistant.",
        model=model,  # the embedded model: offline, no key; or "openai/gpt-5-mini" with OPENAI_API_KEY
        input_processors=[guard],
        output_processors=[guard],
        memory=Memory(storage=storage),
    )


support = build_agent()
app = Sluicegate(agents=[support], storage=storage)
'''

TEST = '''\
"""Runs offline on a scripted model: `python -m pytest` in this folder."""

from __future__ import annotations

from app import build_agent

from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step


def test_personal_data_never_reaches_the_model() -> None:
    model = MockModel([text_step("Thanks, I will write to you there.")])
    result = build_agent(model).generate_sync("My email is ada@example.com, any news?")
    assert result.text == "Thanks, I will write to you there."
    (call,) = model.calls
    assert "ada@example.com" not in str(call.prompt)


def test_the_answer_is_redacted_too() -> None:
    model = MockModel([text_step("Sure: the card on file is 4111 1111 1111 1111.")])
    result = build_agent(model).generate_sync("Which card do you have?")
    assert "4111 1111 1111 1111" not in result.text
'''

README = """\
# {name}

A support agent guarded by [sluicegate](https://pypi.org/project/sluicegate/): a `RegexFilter`
redacts personal data and secrets in what users send (before the model sees it) and in what the
model answers.

```sh
pip install 'sluicegate[local,server]' pytest   # the embedded model and the server
sluicegate dev app.py              # the studio: http://127.0.0.1:4111/studio
sluicegate run app.py "My email is ada@example.com. Hello!"
sluicegate chat app.py             # a conversation
sluicegate agents app.py           # what the app serves
python -m pytest                   # the tests, offline, on a scripted model
```

The agent runs on the embedded model (`local/smollm2-135m`, 93 MB of weights fetched once into
`~/.cache/sluicegate` before its first answer). For a hosted model, set its key and change
`model=` in `app.py`, e.g. `"openai/gpt-5-mini"` with `OPENAI_API_KEY`.

Conversations are kept in `app.db`. Give the agent a tool with `@tool(require_approval=True)`
(and a hosted model: the embedded one is too small for tools): `run` then stops before each
call, prints the run id and exits with status 4; decide it with `sluicegate approve app.py
RUN_ID` or `sluicegate decline app.py RUN_ID --reason "..."` (`chat` asks at the prompt).
"""

FILES = {"app.py": APP, "test_app.py": TEST, "README.md": README}


def scaffold(directory: str) -> list[Path]:
    """Write the app into `directory` (made if missing); the paths written."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ConfigurationError(f"{directory} exists and is not a folder")
    taken = [name for name in FILES if (target / name).exists()]
    if taken:
        raise ConfigurationError(f"{directory} already has {', '.join(taken)}: nothing was written")
    name = target.resolve().name
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, template in FILES.items():
        path = target / file_name
        path.write_text(template.format(name=name), encoding="utf-8")
        written.append(path)
    return written
