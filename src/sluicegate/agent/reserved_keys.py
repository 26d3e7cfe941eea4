"""The reserved request-context keys bind a call to a resource (and optionally a thread).

Authentication middleware sets `RESOURCE_ID_KEY` / `THREAD_ID_KEY` in the `RequestContext` it
passes to `Agent.generate` / `stream` (Mastra's `MASTRA_RESOURCE_ID_KEY` /
`MASTRA_THREAD_ID_KEY`). Those values come from the server side, so they take precedence over
the `memory=` option, which often carries what a client sent:

- an option that omits the resource (or, with a bound thread, the thread) gets the bound one;
- an option that names a *different* one is refused with `IdentityMismatchError`.

Mastra silently prefers the context's value; refusing instead makes a front end that names the
wrong id fail loudly, rather than write into a thread the caller did not mean.

```python
import asyncio

from sluicegate import RESOURCE_ID_KEY, Agent, RequestContext
from sluicegate.errors import IdentityMismatchError
from sluicegate.memory import Memory
from sluicegate.testing import MockModel, text_step

agent = Agent(name="a", model=MockModel([text_step("hi"), text_step("hi")]), memory=Memory())
alice = RequestContext({RESOURCE_ID_KEY: "alice"})  # set by your authentication


async def main() -> None:
    await agent.generate("Hello", memory={"thread": "t1"}, request_context=alice)  # alice's t1
    try:
        await agent.generate("Hi", memory={"thread": "t2", "resource": "bob"}, request_context=alice)
    except IdentityMismatchError as error:
        print(error)


asyncio.run(main())
```
"""

from __future__ import annotations

from typing import Any

from sluicegate.errors import IdentityMismatchError
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext


def apply_reserved_keys(memory_option: dict[str, Any], request_context: RequestContext) -> dict[str, Any]:
    """The `memory=` option with the context's bound resource/thread filled in; a copy when
    anything changes, the option itself otherwise. Raises `IdentityMismatchError` when the
    option names another resource or thread than the bound one."""
    bound_resource = request_context.get(RESOURCE_ID_KEY)
    bound_thread = request_context.get(THREAD_ID_KEY)
    if bound_resource is None and bound_thread is None:
        return memory_option
    option = dict(memory_option)
    if bound_thread is not None:
        thread = option.get("thread")
        thread_id = thread.get("id") if isinstance(thread, dict) else thread
        if thread_id is None:
            option["thread"] = bound_thread
        elif thread_id != bound_thread:
            raise IdentityMismatchError("thread", str(thread_id))
    if bound_resource is not None:
        resource = option.get("resource")
        if resource is not None and resource != bound_resource:
            raise IdentityMismatchError("resource", str(resource))
        option["resource"] = bound_resource
    return option
