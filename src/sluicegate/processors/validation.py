"""Misuse caught where it is made: when processors are registered, not halfway through a run.

A processor that spells a hook Mastra's way (`processInput`) would otherwise be silently never
called; a step result with a typo (`{"modle": ...}`) would silently change nothing. Both are
`ConfigurationError`s naming the processor and what to write instead.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

from sluicegate.errors import ConfigurationError
from sluicegate.processors.args import STEP_FIELDS, ProcessInputStepResult
from sluicegate.processors.base import HOOKS, Processor, processor_id
from sluicegate.processors.option_check import class_name
from sluicegate.processors.returns import RESULT_KEYS, dict_fields


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.upper() if word in ("llm", "api") else word.title() for word in rest)


CAMEL_HOOKS: dict[str, str] = {
    **{_camel(hook): hook for hook in HOOKS},
    "processDataParts": "process_data_parts",
}
"""Mastra's spellings: `processInput` -> `process_input`, `processLLMRequest` -> ..."""
_LOOSE_CAMEL = {re.sub(r"[^a-z]", "", camel.lower()): snake for camel, snake in CAMEL_HOOKS.items()}
_HOOK_SET = frozenset(HOOKS)

STEP_RESULT_KEYS = frozenset(
    (*STEP_FIELDS, "messages", "message_list", "system_messages", *ProcessInputStepResult.__slots__)
)
_STEP_RESULT_CAMEL = frozenset(
    ("toolChoice", "activeTools", "messageList", "systemMessages", "providerOptions", "modelSettings")
) | {"structuredOutput"}


def _misspelling(names: Iterable[str]) -> tuple[str, str] | None:
    """(the camelCase name, its hook) for the first Mastra-spelled hook among `names`."""
    for name in names:
        if name.startswith("process") and "_" not in name:
            snake = CAMEL_HOOKS.get(name) or _LOOSE_CAMEL.get(name.lower())
            if snake is not None:
                return name, snake
    return None


def _uncallable_hook(names: Iterable[str], owner: Any) -> str | None:
    for name in names:
        if name in _HOOK_SET and not callable(getattr(owner, name, None)):
            return name
    return None


_class_checks: WeakKeyDictionary[type, tuple[tuple[str, str] | None, str | None]] = WeakKeyDictionary()


def _class_check(cls: type) -> tuple[tuple[str, str] | None, str | None]:
    """What is wrong with a processor class (cached: registration happens on every call)."""
    found = _class_checks.get(cls)
    if found is None:
        names = dir(cls)
        found = _class_checks[cls] = (_misspelling(names), _uncallable_hook(names, cls))
    return found


def _not_a_processor(processor: Any, where: str) -> ConfigurationError | None:
    """A class where an instance belongs, or an object with no hook at all: both would only
    fail (or silently do nothing) once a run reaches them."""
    if isinstance(processor, type):
        name = class_name(processor)
        return ConfigurationError(
            f"{where} is the class {name}, not a processor: pass {name}(...), an instance"
        )
    if isinstance(processor, Processor) or any(hasattr(processor, hook) for hook in HOOKS):
        return None
    workflows = sys.modules.get("sluicegate.processors.workflow")
    if workflows is not None and isinstance(processor, workflows.ProcessorWorkflow):
        return None  # committed with only function steps: no hook, and nothing to run
    return ConfigurationError(
        f"{where} ({processor!r:.60}) is not a processor: it has none of the hooks "
        f"({', '.join(HOOKS)}); subclass sluicegate.processors.Processor"
    )


def check_processor(processor: Any, where: str) -> str:
    """The processor's id, after checking that it is a processor instance whose hooks are
    spelled and typed as the runner expects. `where` names its place (for the message)."""
    problem = _not_a_processor(processor, where)
    if problem is not None:
        raise problem
    try:
        pid = processor_id(processor)
    except TypeError as exc:
        raise ConfigurationError(f"{where}: {exc}") from exc
    misspelled, uncallable = _class_check(type(processor))
    own = getattr(processor, "__dict__", None)
    if own:
        misspelled = misspelled or _misspelling(own)
        uncallable = _uncallable_hook(own, processor) or uncallable
    if misspelled is not None:
        raise ConfigurationError(
            f"{where}: processor {pid!r} defines {misspelled[0]!r}, which is never called; "
            f"sluicegate hooks are snake_case: rename it to {misspelled[1]!r}"
        )
    if uncallable is not None and not callable(getattr(processor, uncallable, None)):
        raise ConfigurationError(
            f"{where}: processor {pid!r} has a {uncallable!r} attribute that is not callable "
            f"({type(getattr(processor, uncallable)).__name__})"
        )
    return pid


def check_processor_array(value: Any, where: str) -> list[Any]:
    """A resolved processor array (what a callable array returned, too) as a list."""
    if isinstance(value, type):
        name = class_name(value)
        raise ConfigurationError(f"{where} is the class {name}: pass a list of instances, [{name}(...)]")
    if not isinstance(value, (list, tuple)):
        raise ConfigurationError(
            f"{where} must be a list of processors (or a callable returning one), got {type(value).__name__}"
        )
    processors = list(value)
    for index, processor in enumerate(processors):
        check_processor(processor, f"{where}[{index}]")
    return processors


def check_step_result_keys(result: dict[str, Any], pid: str, hook: str) -> None:
    """Reject keys of a `process_input_step` / `prepare_step` dict result that mean nothing
    (the rule every hook's dict result follows: `sluicegate.processors.returns`)."""
    dict_fields(result, pid, "process_input_step" if hook not in RESULT_KEYS else hook)
