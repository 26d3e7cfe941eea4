"""Fallback models: `model=[{"model": m, "max_retries": n}, ...]`, tried in order.

A step's call goes to the run's current model; once that model has failed past its own
`max_retries` (and no error processor asked for a retry), the next entry serves the step, and
the run stays on it for the steps that follow. A single model is a list of one, so the step
asks the same object for its model whatever the agent was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sluicegate.errors import ConfigurationError, SluicegateError
from sluicegate.models.base import LanguageModel, model_label
from sluicegate.models.circuit_breaker import CircuitBreaker, counts_as_failure
from sluicegate.models.registry import resolve_model

ENTRY_KEYS = ("max_retries", "model")


@dataclass(frozen=True, slots=True)
class FallbackEntry:
    """One model of the list; `max_retries` None inherits the call's `max_retries`."""

    model: Any
    max_retries: int | None = None


def parse_model_option(value: Any, *, where: str = "model") -> list[FallbackEntry] | None:
    """The entries of a fallback list, None for a single model (a string or a model object).

    Checked where the agent (or the call) is configured, so a typo fails there and not in the
    middle of a run that needed its second model."""
    if not isinstance(value, (list, tuple)):
        return None
    if not value:
        raise ConfigurationError(f"{where}: a fallback list needs at least one model, got []")
    return [_entry(item, f"{where}[{index}]") for index, item in enumerate(value)]


def _entry(item: Any, where: str) -> FallbackEntry:
    if isinstance(item, dict):
        unknown = sorted(str(key) for key in item if key not in ENTRY_KEYS)
        if unknown:
            raise ConfigurationError(
                f"{where}: unknown key(s) {unknown}; a fallback entry takes {list(ENTRY_KEYS)}"
            )
        if "model" not in item:
            raise ConfigurationError(f"{where}: missing key 'model'")
        model = item["model"]
        retries = item.get("max_retries")
        if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
            raise ConfigurationError(
                f"{where}['max_retries'] must be a non-negative integer, got {retries!r}"
            )
    else:
        model, retries = item, None
    if isinstance(model, (list, tuple, dict)) or not (isinstance(model, str) or hasattr(model, "do_stream")):
        raise ConfigurationError(
            f"{where}['model'] must be a 'provider/model' string or a LanguageModel, got {model!r}"
        )
    return FallbackEntry(model, retries)


def model_chain(value: Any, default_max_retries: int, *, where: str = "model") -> ModelChain:
    """A run's models from an agent's or a call's `model=`: a list, or one model (a list of one)."""
    entries = parse_model_option(value, where=where)
    if entries is None:
        return ModelChain.single(resolve_model(value), default_max_retries)
    return ModelChain.resolve(entries, default_max_retries, where=where)


class ModelChain:
    """The models of one run, in order, and the one serving it now (`current`)."""

    __slots__ = ("_models", "_parent", "_retries", "breaker", "index")

    processes_stream = False
    """Whether the models' calls run the run's output stream processors themselves and hand
    over processed chunks (a durable run's model activity does)."""
    publishes_live = False
    """Whether the models' calls publish their chunks to the run's log themselves as they
    stream (a durable run's model activity does): the step's opening chunks are then handed to
    the call (`announce_on_open`), which publishes them once its stream opened, before its own."""

    def __init__(self, models: Sequence[LanguageModel], retries: Sequence[int]) -> None:
        if not models or len(models) != len(retries):
            raise ValueError("a ModelChain needs one retry budget per model, and at least one model")
        self._models = list(models)
        self._retries = list(retries)
        self.index = 0
        self.breaker: CircuitBreaker | None = None
        """Skips models whose circuit is open (see `circuit_breaker`); None: every model is tried."""
        self._parent: tuple[ModelChain, int] | None = None
        """For a step's chain whose first model a processor chose: the run's chain and where in
        it this chain's second model is (see `with_chosen`)."""

    def announce_on_open(self, chunks: list[Any]) -> None:
        """The step's opening chunks (its processed `step-start`), for the next call to publish
        as soon as its stream opened, before its own chunks: a call that fails to open leaves no
        trace, as a run in one process shows a step only once a model's stream opened. Only a
        chain that `publishes_live` takes them; for the others the loop yields them itself."""
        raise TypeError(f"{type(self).__name__} does not publish its calls' chunks: the loop yields them")

    def with_chosen(self, model: LanguageModel, max_retries: int) -> ModelChain:
        """The step's chain when a processor chose its model (`ModelRouterProcessor`,
        `ModelSelectionProcessor`, `prepare_step`): the chosen model takes the current model's
        place and the fallback models after it stay, so they serve when the chosen one fails.
        Moving on in it moves the run's chain too: the run stays on the fallback that served."""
        start = self.index + 1
        chosen = ModelChain([model, *self._models[start:]], [max_retries, *self._retries[start:]])
        chosen.breaker = self.breaker
        chosen._parent = (self, start)
        return chosen

    def _moved(self) -> None:
        if self._parent is not None and self.index > 0:
            parent, start = self._parent
            parent.index = start + self.index - 1

    @classmethod
    def single(cls, model: LanguageModel, max_retries: int) -> ModelChain:
        return cls([model], [max_retries])

    @classmethod
    def resolve(
        cls, entries: Sequence[FallbackEntry], default_max_retries: int, *, where: str = "model"
    ) -> ModelChain:
        """Every entry's model, resolved now: an unknown provider fails the call before it starts."""
        models: list[LanguageModel] = []
        for index, entry in enumerate(entries):
            try:
                models.append(resolve_model(entry.model))
            except SluicegateError as exc:
                raise ConfigurationError(f"{where}[{index}]['model']: {exc}") from exc
        retries = [default_max_retries if e.max_retries is None else e.max_retries for e in entries]
        return cls(models, retries)

    def __len__(self) -> int:
        return len(self._models)

    @property
    def current(self) -> LanguageModel:
        return self._models[self.index]

    @property
    def max_retries(self) -> int:
        """How often the current model is retried before the next one is asked."""
        return self._retries[self.index]

    @property
    def is_last(self) -> bool:
        return self.index == len(self._models) - 1

    def advance(self) -> bool:
        """Move to the next model; False when there is none."""
        if self.is_last:
            return False
        self.index += 1
        self._moved()
        return True

    def labels(self) -> list[str]:
        return [model_label(m) for m in self._models]

    async def pick(self) -> LanguageModel:
        """The model to call now: `current`, past any whose circuit is open (never past the last)."""
        breaker = self.breaker
        if breaker is not None:
            while not self.is_last and not await breaker.allows(model_label(self._models[self.index])):
                self.index += 1
            self._moved()
        return self._models[self.index]

    async def record(self, model: LanguageModel, error: BaseException | None) -> None:
        """A call's outcome, for the circuit breaker (a failure that says nothing about the model,
        like a 400, is not counted)."""
        breaker = self.breaker
        if breaker is None:
            return
        if error is None:
            await breaker.succeeded(model_label(model))
        elif counts_as_failure(error):
            await breaker.failed(model_label(model))
