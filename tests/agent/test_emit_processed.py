"""`RunCore.emit_processed`: a chunk the stream processors already saw where it was made (a
durable run's tool activity) passes once, as it is; any other chunk goes through them."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, text_step


class Tag(Processor):
    id = "tag"
    process_data_parts = True

    def process_output_stream(self, args: Any) -> Any:
        part = args.part
        if part.type.startswith("data-"):
            part.data = {**part.data, "seen": True}
        return part


async def test_a_chunk_processed_elsewhere_passes_once_and_only_itself() -> None:
    agent = Agent("a", model=MockModel([text_step("ok")]), output_processors=[Tag()])
    run = await agent.prepare_run("hi", {})
    run.pipeline = run.runner.stream_pipeline(run.message_list)
    done = Chunk("data-x", run.run_id, data={"n": 1})
    run.processed_elsewhere[id(done)] = done
    assert [c.data for c in await run.emit_processed(done)] == [{"n": 1}]
    # Listed once: the same chunk again goes through the processors.
    assert [c.data for c in await run.emit_processed(done)] == [{"n": 1, "seen": True}]
    # An entry whose id names another chunk (the listed one freed, its id reused) lets nothing by.
    other = Chunk("data-x", run.run_id, data={"n": 2})
    run.processed_elsewhere[id(other)] = done
    assert [c.data for c in await run.emit_processed(other)] == [{"n": 2, "seen": True}]
