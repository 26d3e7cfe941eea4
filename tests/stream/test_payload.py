"""`Payload.to_dict` / `to_json`: plain values are written as they are, everything else is
converted (a payload, an error, a list, an object with `to_dict` or `model_dump`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sluicegate.messages.part import Part
from sluicegate.stream.payload import Payload, to_json


class Point(BaseModel):
    x: int


class Label(str):
    """A str subclass that converts itself: the plain-value shortcut must not skip it."""

    def to_dict(self) -> dict[str, Any]:
        return {"label": str(self)}


def test_plain_values_are_written_as_they_are_and_user_dicts_keep_their_keys() -> None:
    args = {"tool_call_id": 1, "nested": {"a_b": [1, 2]}}
    out = Payload(text="hi", count=3, ratio=0.5, done=False, args=args, gone=None, result=None).to_dict()
    assert out == {"text": "hi", "count": 3, "ratio": 0.5, "done": False, "args": args, "result": None}
    assert out["args"] is args  # user data: not copied, keys not converted
    assert to_json("x") == "x" and to_json(None) is None and to_json(args) is args


def test_everything_else_is_converted() -> None:
    part = Part(type="text", text="hi")
    out = Payload(
        usage=Payload(input_tokens=1),
        error=ValueError("bad"),
        items=[Payload(step_number=2), Point(x=1), "s"],
        point=Point(x=3),
        label=Label("tag"),
        part=part,
    ).to_dict()
    assert out["usage"] == {"inputTokens": 1}
    assert out["error"] == {"message": "bad", "name": "ValueError"}
    assert out["items"] == [{"stepNumber": 2}, {"x": 1}, "s"]
    assert out["point"] == {"x": 3}
    assert out["label"] == {"label": "tag"}
    assert out["part"] == part


def test_from_json_reads_keys_snake_case_and_nested_payloads_back() -> None:
    data = {"toolCallId": "c1", "args": {"keyName": 1}, "stepResult": {"isContinued": True}, "usage": 3}
    payload = Payload.from_json(data)
    assert payload == Payload(
        tool_call_id="c1", args={"keyName": 1}, step_result=Payload(is_continued=True), usage=3
    )
    assert payload.args is data["args"]  # user data: as it came
    assert payload.to_dict() == data
