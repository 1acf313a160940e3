"""The numpy MiniLM (rag_rlm.embed_numpy) against the sentence-transformers one it stands in for
when a short-lived command answers: the same vectors, the same token counts and offsets, and
other model folders left to sentence-transformers."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from clirun import SAMPLE

from rag_rlm.embed import SentenceTransformerEmbedder, bundled_model_path
from rag_rlm.embed_numpy import NumpyBertEmbedder, fits_numpy, load_answer_embedder
from rag_rlm.errors import ModelNotFound

TEXTS = [
    "How many vacation days do new hires get?",
    "  leading and trailing spaces are stripped, as sentence-transformers does  ",
    "",
    "Ünïcödé — naïve café, 3.5 % e.g. ≥ 22 days; 日本語のテキスト",
    "word " * 400,  # longer than the model's 256 tokens: truncated alike
    *(p.read_text(encoding="utf-8") for p in sorted(SAMPLE.iterdir())),
]


@pytest.fixture(scope="module")
def numpy_embedder():
    return NumpyBertEmbedder(bundled_model_path())


def test_vectors_match_sentence_transformers(numpy_embedder, embedder):
    ours, theirs = numpy_embedder.embed(TEXTS), embedder.embed(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_one_text_alone_is_encoded_as_in_a_batch(numpy_embedder):
    """Padding must not leak into a text's vector."""
    alone = numpy_embedder.embed([TEXTS[0]])[0]
    assert np.abs(alone - numpy_embedder.embed(TEXTS)[0]).max() < 1e-6


def test_tokens_are_counted_and_placed_alike(numpy_embedder, embedder):
    for text in TEXTS:
        assert numpy_embedder.count_tokens(text) == embedder.count_tokens(text)
        assert numpy_embedder.token_offsets(text) == embedder.token_offsets(text)
    assert (numpy_embedder.dimension, numpy_embedder.max_tokens) == (embedder.dimension, embedder.max_tokens)
    assert numpy_embedder.embed([]).shape == (0, 384)


def test_other_shapes_go_to_sentence_transformers(tmp_path):
    model = tmp_path / "cls-pooled"
    shutil.copytree(bundled_model_path(), model)
    pooling = model / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    assert fits_numpy(bundled_model_path()) and not fits_numpy(model) and not fits_numpy(tmp_path / "nothing")
    with pytest.raises(ModelNotFound):
        NumpyBertEmbedder(model)
    assert isinstance(load_answer_embedder(str(model)), SentenceTransformerEmbedder)
    assert isinstance(load_answer_embedder(""), NumpyBertEmbedder)
