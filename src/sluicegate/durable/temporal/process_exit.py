"""Ending a worker process without finalizing the interpreter: the one place sluicegate calls a
private function of the standard library (`atexit._run_exitfuncs`).

Python offers no public way to run the registered exit handlers and then end the process
without finalizing it: `sys.exit` finalizes (where the Temporal SDK's threads can abort the
process), `os._exit` skips the handlers (span exporters flush in them). `_run_exitfuncs` is what
the interpreter itself calls at exit, unchanged since Python 3.0;
`tests/durable/test_process_exit.py` fails if a release removes it or it stops running the
handlers.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def exit_worker_process(code: int = 0) -> NoReturn:
    """End a worker process whose worker has shut down (its activities finished and reported).

    The Temporal SDK's Rust threads outlive the event loop, and one taking the GIL while the
    interpreter finalizes aborts the process ("Fatal Python error: PyGILState_Release",
    temporalio/sdk-python#300), sometimes, after a clean stop. So the exit handlers run here
    (span exporters flush in them), the streams are flushed, and the process ends without
    finalizing the interpreter: nothing is left to clean up that another process could see."""
    atexit._run_exitfuncs()  # see the module docstring
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: there is no one left to read it
    os._exit(code)
