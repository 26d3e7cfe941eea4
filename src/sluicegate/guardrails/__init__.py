"""The machinery the guardrail processors share; the processors themselves live in
`sluicegate.processors.builtin` and are exported by `sluicegate.processors`.

Nothing is imported here, so each processor loads only the parts it uses; the public names
below load on first access (`PresidioRecognizer` imports presidio-analyzer only when it
analyses).
"""

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes

if TYPE_CHECKING:
    from sluicegate.guardrails.presidio import PresidioRecognizer
    from sluicegate.guardrails.recognizer import Recognized, Recognizer

__getattr__ = lazy_attributes(
    __name__,
    {"PresidioRecognizer": "presidio", "Recognized": "recognizer", "Recognizer": "recognizer"},
)

__all__ = ["PresidioRecognizer", "Recognized", "Recognizer"]
