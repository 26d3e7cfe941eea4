"""llama.cpp's own OpenAI-compatible HTTP server, as shipped in the `xllamacpp` wheel, for the
integration tests: `python -m tests.models.llama_cpp_server MODEL PORT [CHAT_TEMPLATE]` serves the
GGUF on 127.0.0.1:PORT (as `smollm2`) until it is terminated."""

from __future__ import annotations

import sys
import threading
from pathlib import Path


def main(model: str, port: int, chat_template: str | None = None) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = "smollm2"
    params.n_ctx = 2048
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.offline = True
    params.ui = False
    params.warmup = False
    params.n_threads_http = 2
    if chat_template:
        params.chat_template = Path(chat_template).read_text()
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    threading.Event().wait()  # serve until SIGTERM


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
