"""`exit_worker_process`: the exit handlers run, the streams are flushed, the code is kept (the
adapter over `atexit._run_exitfuncs`, see `durable/temporal/process_exit.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULE = str(Path(__file__).resolve().parents[2] / "src/sluicegate/durable/temporal/process_exit.py")

# The module alone (it imports only the standard library): the package would load temporalio.
SCRIPT = """
import atexit, importlib.util
spec = importlib.util.spec_from_file_location("process_exit", %r)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
atexit.register(lambda: print("handler ran"))
print("before exit", end="")
module.exit_worker_process(3)
print("never")
"""


def test_exit_handlers_run_and_the_code_is_kept() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT % MODULE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "before exithandler ran\n"
