"""Settings validation and the bundled embedder."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_rlm.config import Settings
from rag_rlm.embed import CachedEmbedder, SentenceTransformerEmbedder, bundled_model_path, cached
from rag_rlm.errors import ConfigError, ModelNotFound


@pytest.mark.parametrize("env,setting", [
    ({"RAG_RLM_TOP_K": "many"}, "RAG_RLM_TOP_K"),
    ({"RAG_RLM_TOP_K": "0"}, "top_k"),
    ({"RAG_RLM_REFLECT": "maybe"}, "RAG_RLM_REFLECT"),
    ({"RAG_RLM_CHUNK_TOKENS": "100", "RAG_RLM_CHUNK_OVERLAP": "100"}, "chunk_overlap"),
    ({"RAG_RLM_LLM_QUANTIZATION": "3bit"}, "llm_quantization"),
    ({"RAG_RLM_STORE": "just-a-path"}, "store"),
    ({"RAG_RLM_API_KEYS": "keywithouttenant"}, "RAG_RLM_API_KEYS"),
    ({"RAG_RLM_COLLECTION": "no spaces"}, "collection"),
    ({"RAG_RLM_STORE_TIMEOUT": "0"}, "store_timeout"),
    ({"RAG_RLM_STORE_TIMEOUT": "soon"}, "RAG_RLM_STORE_TIMEOUT"),
    ({"RAG_RLM_READER_PRECISION": "fp16"}, "reader_precision"),
    ({"RAG_RLM_MODEL_LANES": "-1"}, "model_lanes"),
    ({"RAG_RLM_READER_INT8": "true"}, "RAG_RLM_READER_INT8"),  # replaced: the error names what replaced it
])
def test_bad_settings_name_the_setting(env, setting):
    with pytest.raises(ConfigError) as e:
        Settings.from_env(env)
    assert e.value.setting == setting and setting in str(e.value)


def test_trusted_proxies_are_a_list_of_addresses_or_networks(tmp_path):
    from rag_rlm.server.app import settings_to_env

    s = Settings.from_env({"RAG_RLM_TRUSTED_PROXIES": " 10.0.0.0/8, 127.0.0.1 ,"})
    assert s.trusted_proxies == ["10.0.0.0/8", "127.0.0.1"] and Settings().trusted_proxies == []
    assert Settings.from_env(settings_to_env(s)).trusted_proxies == s.trusted_proxies  # what workers rebuild
    toml = tmp_path / "rag.toml"
    toml.write_text('trusted_proxies = ["::1", "192.168.0.0/16"]\n')
    assert Settings.from_env({}, config_file=toml).trusted_proxies == ["::1", "192.168.0.0/16"]
    for bad in ("10.0.0.0/33", "10.0.0.1/8", "proxy.local"):
        with pytest.raises(ConfigError) as e:
            Settings.from_env({"RAG_RLM_TRUSTED_PROXIES": f"127.0.0.1,{bad}"})
        assert e.value.setting == "trusted_proxies" and repr(bad) in str(e.value)
    toml.write_text('trusted_proxies = "10.0.0.1"\n')
    with pytest.raises(ConfigError, match="expected list"):
        Settings.from_env({}, config_file=toml)


@pytest.mark.parametrize("setting", ["store_statement_timeout", "state_retention_days"])
def test_negative_ops_durations_are_refused_and_zero_means_none(setting):
    with pytest.raises(ConfigError) as e:
        Settings.from_env({"RAG_RLM_" + setting.upper(): "-1"})
    assert e.value.setting == setting
    assert getattr(Settings.from_env({"RAG_RLM_" + setting.upper(): "0"}), setting) == 0


def test_environment_overrides_toml_and_overrides_win(tmp_path):
    toml = tmp_path / "rag.toml"
    toml.write_text('top_k = 3\nmax_depth = 1\n')
    s = Settings.from_env({"RAG_RLM_MAX_DEPTH": "3", "RAG_RLM_API_KEYS": "k1=a, k2=b"}, config_file=toml, top_k=None)
    assert (s.top_k, s.max_depth, s.api_keys) == (3, 3, {"k1": "a", "k2": "b"})
    assert Settings.from_env({}, config_file=toml, top_k=9).top_k == 9


def test_toml_with_unknown_key_or_bad_syntax_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("topk = 3\n")
    with pytest.raises(ConfigError, match="topk"):
        Settings.from_env({}, config_file=bad)
    bad.write_text("top_k = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Settings.from_env({}, config_file=bad)
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.from_env({}, config_file=tmp_path / "missing.toml")


def test_public_settings_hide_secrets():
    s = Settings(api_keys={"secret-key": "t"}, llm_api_key="sk-123")
    public = s.public()
    assert "secret-key" not in str(public) and "sk-123" not in str(public)


def test_bundled_embedder_gives_unit_vectors_and_offsets(embedder):
    assert bundled_model_path().endswith("model")
    vectors = embedder.embed(["The deploy freeze starts on Friday.", "Vacation days for new hires."])
    assert vectors.shape == (2, embedder.dimension) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    text = "Héllo, world"
    assert [text[a:b] for a, b in embedder.token_offsets(text)][-1] == "world"


def test_embedder_is_safe_to_share_between_threads(embedder):
    texts = [("word " * n).strip() for n in range(1, 40)]
    expected = embedder.embed(texts)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda t: embedder.embed([t])[0], texts))
        counts = list(pool.map(embedder.count_tokens, texts))
    assert np.allclose(np.stack(got), expected, atol=1e-5)
    assert counts == list(range(1, 40))


def test_missing_model_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFound, match=str(tmp_path)):
        SentenceTransformerEmbedder(str(tmp_path / "nope"))


def test_concurrent_callers_share_an_encode_and_each_gets_its_own_vectors():
    import threading

    import numpy as np

    from rag_rlm.embed import load_embedder

    embedder = load_embedder()
    alone = {i: embedder.embed([f"question number {i}", "shared text"]) for i in range(12)}
    together: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: together.update({i: embedder.embed([f"question number {i}",
                                                                                     "shared text"])}))
               for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(together) == list(range(12))
    for i in range(12):
        assert together[i].shape == (2, embedder.dimension)
        assert np.allclose(together[i], alone[i], atol=1e-5)


def test_cached_embedder_encodes_a_text_once_while_it_is_recent(embedder):
    calls: list[list[str]] = []

    class Recording:
        dimension, max_tokens = embedder.dimension, embedder.max_tokens

        def embed(self, texts):
            calls.append(list(texts))
            return embedder.embed(texts)

        def count_tokens(self, text):
            calls.append(["count: " + text])
            return embedder.count_tokens(text)

        def token_offsets(self, text):
            return embedder.token_offsets(text)

    vectors = CachedEmbedder(Recording(), size=2)
    assert cached(vectors) is vectors
    got = vectors.embed(["a question", "a question", "a span"])
    assert calls == [["a question", "a span"]]  # the misses, each once, in one call
    assert np.allclose(got, embedder.embed(["a question", "a question", "a span"]), atol=1e-5)
    assert np.allclose(vectors.embed(["a span"]), got[2:], atol=1e-6) and len(calls) == 1
    vectors.embed(["another"])  # the least recently used ("a question") makes room
    vectors.embed(["a question"])
    assert calls[1:] == [["another"], ["a question"]]
    assert vectors.count_tokens("three words here") == vectors.count_tokens("three words here") == 3
    assert calls.count(["count: three words here"]) == 1
    assert vectors.embed([]).shape == (0, embedder.dimension)
