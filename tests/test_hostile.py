"""Hostile input on a live server: every bad request is a 4xx naming its cause (never a 500/503
or a traceback), failed authentication is rate-limited per address, tenant names are data,
zip bombs and oversize documents are refused per file, and rejected uploads leave no temp files."""

from __future__ import annotations

import io
import os
import tempfile
import threading
import time
import uuid
import zipfile

import docx
import httpx
import psutil
import pytest
from test_server_support import KEYS, LiveServer, open_settings, shared_assistant

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.errors import ConfigError
from rag_rlm.server.auth import Caller

VACATION_Q = "How many vacation days do new hires get per year?"


@pytest.fixture(scope="module")
def assistant(pg_url, embedder, tmp_path_factory):
    return shared_assistant(pg_url, tmp_path_factory.mktemp("server_data"), embedder)


@pytest.fixture(scope="module")
def capped(assistant, embedder):
    """An Assistant over the same store whose ingest caps a document at 1 MB."""
    capped = Assistant(assistant.settings.replace(max_document_bytes=1_000_000), embedder=embedder)
    yield capped
    capped.close()


@pytest.fixture(scope="module")
def srv(capped):
    """Open server, default body caps, a 1 MB per-document cap."""
    with LiveServer(open_settings(capped), capped) as s:
        yield s


@pytest.fixture(scope="module")
def tenants(assistant):
    with LiveServer(open_settings(assistant, api_keys=KEYS, auth_failures_per_minute=5), assistant) as s:
        yield s


def error(r):
    assert r.headers["content-type"].startswith("application/json"), r.text
    assert "Traceback" not in r.text
    return r.json()["error"]


def fresh() -> str:
    return "h_" + uuid.uuid4().hex[:10]


def stored_ids(assistant, collection: str) -> list[str]:
    try:
        return sorted(r.id for r in assistant.documents(collection))
    except Exception:  # unknown collection: nothing stored
        return []


def upload_folders(assistant) -> set[str]:
    """Upload folders under the data folder (where every upload is saved, so a restart cleans up)."""
    root = os.path.join(assistant.settings.data_dir, "uploads")
    return set(os.listdir(root)) if os.path.isdir(root) else set()


# --- 1. bad requests are 4xx naming the cause ---------------------------------------------

def test_nul_in_a_question_is_422_naming_question(srv):
    with srv.client() as c:
        r = c.post("/v1/ask", json={"question": "vacation\x00days?"})
        assert r.status_code == 422 and error(r)["field"] == "question" and "NUL" in error(r)["message"]
        r = c.post("/v1/ask", json={"question": "vacation\x00days?", "stream": True})
        assert r.status_code == 422 and error(r)["field"] == "question"
        r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "a\x00b"}]})
        assert r.status_code == 422 and error(r)["field"] == "question"
        r = c.post("/v1/ask", json={"question": "ok?", "history": [{"role": "user", "content": "x\x00"}]})
        assert r.status_code == 422 and error(r)["field"] == "history"
        assert c.post("/v1/ask", json={"question": VACATION_Q}).status_code == 200  # the store still answers


def test_invalid_utf8_json_is_400(srv):
    with srv.client() as c:
        r = c.post("/v1/ask", content=b'{"question": "caf\xe9?"}', headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    e = error(r)
    assert e["field"] == "body" and "UTF-8" in e["message"]


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/chat/completions"])
def test_json_nested_20k_deep_is_400(srv, path):
    deep = b"[" * 20_000 + b"]" * 20_000
    bodies = {"/v1/ask": b'{"question": "ok?", "x": ' + deep + b"}",
              "/v1/chat/completions": b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", '
                                      b'"x": ' + deep + b"}]}]}"}
    with srv.client() as c:
        r = c.post(path, content=bodies[path], headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text[:300]
    assert error(r)["field"] == "body" and "nested" in error(r)["message"]


@pytest.mark.parametrize("name", ["a" * 256 + ".md", "d/" + "b" * 256 + ".md", "e/" * 130 + "x.md"])
def test_unusable_upload_names_are_422_naming_files(srv, assistant, name):
    collection = fresh()
    before = upload_folders(assistant)
    with srv.client() as c:
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", ("ok.md", b"# Ok\n\nfine\n")), ("files", (name, b"# Long\n\ntext\n"))])
    assert r.status_code == 422, r.text[:300]
    assert error(r)["field"] == "files"
    assert stored_ids(assistant, collection) == []  # the upload is refused whole
    assert upload_folders(assistant) <= before


@pytest.mark.parametrize("names", [["c.md", "c.md/d.md"], ["c.md/d.md", "c.md"], ["same.md", "same.md"],
                                   ["x/../same.md", "same.md"]])
def test_colliding_upload_names_are_422_naming_them(srv, assistant, names):
    collection = fresh()
    before = upload_folders(assistant)
    with srv.client() as c:
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", (n, f"# {i}\n\ntext {i}\n".encode())) for i, n in enumerate(names)])
    assert r.status_code == 422, r.text[:300]
    e = error(r)
    assert e["field"] == "files" and ("c.md" if "c.md" in names else "same.md") in e["message"]
    assert stored_ids(assistant, collection) == []
    assert upload_folders(assistant) <= before


def test_413_states_the_limit_in_bytes(assistant):
    with LiveServer(open_settings(assistant, max_body_bytes=2000, max_upload_bytes=5000), assistant) as s, \
            s.client() as c:
        r = c.post("/v1/ask", json={"question": "x", "padding": "y" * 5000})
        assert r.status_code == 413 and error(r)["field"] == "body" and "2000 bytes" in error(r)["message"]
        r = c.post(f"/v1/collections/{fresh()}/documents", files=[("files", ("a.txt", "z" * 6000))])
        assert r.status_code == 413 and "5000 bytes" in error(r)["message"]


# --- 2. failed authentication is rate-limited per address ---------------------------------

def test_failed_auth_is_rate_limited_per_address(tenants):
    other = httpx.HTTPTransport(local_address="127.0.0.2")
    with tenants.client("wrong") as bad, tenants.client() as anon, tenants.client("key-acme") as same_ip, \
            tenants.client("key-acme", transport=other) as elsewhere:
        codes = [(bad if i % 2 else anon).get("/v1/collections").status_code for i in range(5)]
        assert codes == [401] * 5
        r = bad.get("/v1/collections")
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert error(r)["type"] == "rate_limited" and "authentication" in error(r)["message"]
        # the address is blocked whatever it sends; another address with the right key is not
        assert same_ip.get("/v1/collections").status_code == 429
        ok = elsewhere.get("/v1/collections")
        assert ok.status_code == 200 and "handbook" in {c["name"] for c in ok.json()["collections"]}


# --- 3. tenants as data --------------------------------------------------------------------

@pytest.mark.parametrize("tenant", ["acme_x", "a__b", "dots.x", "t" * 31, "ümlaut"])
def test_bad_tenant_names_are_refused_when_settings_load(tenant):
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"RAG_RLM_API_KEYS": f"k1=good,k2={tenant}"})
    assert "API_KEYS" in info.value.setting.upper() and repr(tenant) in str(info.value)
    with pytest.raises(ConfigError):
        Settings(api_keys={"k": tenant})
    assert Settings(api_keys={"k": "t" * 30, "j": "a-1"}).api_keys["j"] == "a-1"


def test_owner_is_matched_exactly():
    acme = Caller(tenant="acme", rate_key="tenant:acme")
    assert acme.owns("acme__handbook") and acme.owns("acme___x")  # "_x" is acme's own name
    assert not acme.owns("acme-x__handbook") and not acme.owns("acmeco__y") and not acme.owns("acme")
    assert not acme.owns("xacme__y") and not acme.owns("handbook")


def test_errors_show_only_the_callers_names(tenants):
    with tenants.client("key-beta", transport=httpx.HTTPTransport(local_address="127.0.0.3")) as beta:
        long_name = "n" * 60  # a valid name alone, too long once stored under the tenant
        for r in (beta.post("/v1/ask", json={"question": "q?", "collection": long_name}),
                  beta.get(f"/v1/collections/{long_name}/documents"),
                  beta.post(f"/v1/collections/{long_name}/documents", files=[("files", ("a.md", b"# a\n\nb\n"))])):
            assert r.status_code == 422, r.text
            e = error(r)
            assert e["field"] == "collection" and "beta__" not in r.text and long_name in e["message"]
            assert "57" in e["message"]  # the longest name this tenant can use
        r = beta.post("/v1/ask", json={"question": "q?", "collection": "nope"})
        assert r.status_code == 404 and "beta__" not in r.text and "'nope'" in error(r)["message"]


# --- 4. zip bombs and oversize documents ---------------------------------------------------

def _real_docx(text: str) -> bytes:
    d = docx.Document()
    d.add_heading("Bomb shelter", level=1)
    d.add_paragraph(text)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def _docx_bomb(inflated: int) -> bytes:
    """A real docx whose document.xml carries an XML comment of `inflated` zeros: valid, and
    ~1000:1 compressed, so the upload is small and inflating it is not."""
    src = zipfile.ZipFile(io.BytesIO(_real_docx("shelter")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for item in src.infolist():
            data = src.read(item)
            if item.filename != "word/document.xml":
                z.writestr(item, data)
                continue
            head, sep, rest = data.partition(b"?>")
            info = zipfile.ZipInfo(item.filename)
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w", force_zip64=True) as f:
                f.write(head + sep + b"<!--")
                chunk = b"0" * 1_000_000
                for _ in range(inflated // len(chunk)):
                    f.write(chunk)
                f.write(b"-->" + rest)
    return out.getvalue()


class PeakRss:
    def __init__(self):
        self.proc = psutil.Process()
        self.base = self.peak = self.proc.memory_info().rss
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_a_docx_zip_bomb_is_a_per_file_error_without_inflating(srv, assistant):
    bomb = _docx_bomb(200_000_000)
    assert len(bomb) < 1_000_000  # under the per-document cap: only the inflated size is over
    collection = fresh()
    with srv.client() as c, PeakRss() as rss:
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", ("bomb.docx", bomb)), ("files", ("fine.docx", _real_docx("Shelters hold 40.")))])
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["documents_new"] == 1 and body["documents_failed"] == 1
    failure = body["failed"][0]
    assert failure["path"] == "bomb.docx"
    assert "inflates to" in failure["reason"] and "over the limit of 1000000" in failure["reason"]
    assert stored_ids(assistant, collection) == ["fine.docx"]
    assert rss.peak - rss.base < 100_000_000, f"RSS grew by {(rss.peak - rss.base) / 1e6:.0f} MB"


def test_a_zip_entry_compressed_over_100_to_1_is_refused(srv):
    out = io.BytesIO()  # a lean zip: python-docx's template alone inflates to 0.8 MB
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", b"<Types/>")
        z.writestr("word/media/pad.bin", b"\0" * 900_000)  # under the 1 MB cap, but ~1000:1
    with srv.client() as c:
        r = c.post(f"/v1/collections/{fresh()}/documents", files=[("files", ("ratio.docx", out.getvalue()))])
    assert r.status_code == 422, r.text[:300]
    assert "ratio.docx" in error(r)["message"] and ":1" in error(r)["message"]


def test_documents_over_the_size_cap_fail_alone(srv, assistant):
    collection = fresh()
    with srv.client() as c:
        first = c.post(f"/v1/collections/{collection}/documents", files=[("files", ("keep.md", b"# Keep\n\nkept\n"))])
        assert first.status_code == 200 and first.json()["documents_new"] == 1
        big = b"# Big\n\n" + b"word " * 240_000  # 1.2 MB of text
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", ("big.txt", big)), ("files", ("small.md", b"# Small\n\nsmall\n"))])
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["documents_new"] == 1 and body["documents_failed"] == 1
    assert body["failed"][0]["path"] == "big.txt"
    assert "1200007 bytes" in body["failed"][0]["reason"] and "1000000" in body["failed"][0]["reason"]
    assert stored_ids(assistant, collection) == ["keep.md", "small.md"]


# --- 5. temp files ---------------------------------------------------------------------------

def test_a_rejected_upload_leaves_no_temp_folder(srv, assistant):
    before = upload_folders(assistant)
    with srv.client() as c:
        r = c.post(f"/v1/collections/{fresh()}/documents",
                   files=[("files", ("a.md", b"# a\n\nb\n")), ("files", ("../../etc/passwd", b"x"))])
    assert r.status_code == 422 and error(r)["field"] == "files"
    assert upload_folders(assistant) <= before


def test_an_uploaded_documents_source_is_its_uploaded_name(srv, assistant):
    collection = fresh()
    with srv.client() as c:
        r = c.post(f"/v1/collections/{collection}/documents", files=[("files", ("notes/plan.md", b"# Plan\n\nsoon\n"))])
        assert r.status_code == 200 and r.json()["documents_new"] == 1
        docs = c.get(f"/v1/collections/{collection}/documents").json()["documents"]
        doc = c.get(f"/v1/collections/{collection}/documents/notes/plan.md").json()
    assert [d["source"] for d in docs] == ["notes/plan.md"] and doc["source"] == "notes/plan.md"
    assert tempfile.gettempdir() not in r.text + str(docs) and "uploads" not in r.text + str(docs)


# --- 9. nothing dropped or stored silently ------------------------------------------------------

def test_over_1000_upload_parts_is_413_stating_the_limit(srv):
    files = [("files", (f"f{i}.md", b"x")) for i in range(1001)]
    with srv.client() as c:
        r = c.post(f"/v1/collections/{fresh()}/documents", files=files)
    assert r.status_code == 413, r.text[:300]
    assert "1000" in error(r)["message"] and error(r)["field"] == "files"


def test_nul_characters_in_document_text_are_reported_per_record(srv, assistant):
    collection = fresh()
    jsonl = (b'{"id": "ok", "text": "Shelters hold 40 beds."}\n'
             b'{"id": "nul", "text": "bad \\u0000 text"}\n')
    with srv.client() as c:
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", ("corpus.jsonl", jsonl)), ("files", ("binary.txt", b"plain\x00text here\n"))])
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    reasons = " ".join(f["reason"] for f in body["failed"])
    assert "SQL" not in reasons and "0x00" not in reasons and "rag_rlm_" not in reasons
    assert body["documents_failed"] == 2, body
    assert sorted(f["path"] for f in body["failed"]) == ["binary.txt", "corpus.jsonl:2"]
    assert "NUL" in reasons
    assert stored_ids(assistant, collection) == ["ok"]


def test_hidden_and_unsupported_upload_parts_are_reported_not_dropped(srv, assistant):
    collection = fresh()
    with srv.client() as c:
        r = c.post(f"/v1/collections/{collection}/documents",
                   files=[("files", ("guide.md", b"# Guide\n\nRead me.\n")), ("files", (".env", b"SECRET=1\n")),
                          ("files", ("Makefile", b"all:\n")), ("files", ("photo.png", b"\x89PNG"))])
        assert r.status_code == 200, r.text[:300]
        only_bad = c.post(f"/v1/collections/{collection}/documents", files=[("files", ("LICENSE", b"MIT\n"))])
    body = r.json()
    skipped = {f["path"]: f["reason"] for f in body["failed"]}
    assert set(skipped) == {".env", "Makefile", "photo.png"}, body
    assert "hidden" in skipped[".env"] and ".md" in skipped["photo.png"]
    assert body["documents_new"] == 1 and stored_ids(assistant, collection) == ["guide.md"]
    assert only_bad.status_code == 422 and "LICENSE" in error(only_bad)["message"]
