"""The web page in a real headless Chromium (Debian's, driven by Playwright) against a real server
on loopback over the sample corpus: a streamed cited answer, the cited span highlighted in its
document, a follow-up, a not-found answer, upload -> ask -> delete, a folder source added, synced
and removed from the Documents view, and a wrong API key.

The browser is /usr/bin/chromium (`make install` puts it there with apt-get); never downloaded."""

from __future__ import annotations

import functools
import json
import re
import threading
import uuid
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect, sync_playwright
from test_server_support import COLLECTION, KEYS, SAMPLE, LiveServer, open_settings, shared_assistant

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "screenshot.png"
VACATION_Q = "How many vacation days do new hires get per year?"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def assistant(pg_url, embedder, tmp_path_factory):
    return shared_assistant(pg_url, tmp_path_factory.mktemp("web_data"), embedder)


# No server here watches folders: whichever leads the scheduler would sync a changed source folder
# by itself, and the sources test wants the sync its Sync now button starts.
@pytest.fixture(scope="module")
def server(assistant):
    with LiveServer(open_settings(assistant, source_watch=False), assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def keyed_server(assistant):
    with LiveServer(open_settings(assistant, api_keys=KEYS, source_watch=False), assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def source_root(tmp_path_factory):
    return tmp_path_factory.mktemp("web_source_root")


@pytest.fixture(scope="module")
def sources_server(assistant, source_root):
    """A server whose callers may add folders under source_root and sites on loopback as sources."""
    settings = open_settings(assistant, source_roots=[str(source_root)], source_hosts=["127.0.0.1"],
                             source_watch=False)
    with LiveServer(settings, assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make install` installs it (apt-get)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1180, "height": 860})
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server.url + "/")
    expect(pg.locator("#collection option", has_text=COLLECTION).first).to_be_attached()
    pg.select_option("#collection", COLLECTION)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def ask(page: Page, question: str):
    """Type a question, press Enter, wait until its answer is finished; the answer's locator."""
    count = page.locator(".turn").count()
    page.fill("#question", question)
    page.press("#question", "Enter")
    answer = page.locator(".turn").nth(count).locator("article.answer")
    expect(answer).not_to_have_class(re.compile(r"\bpending\b"))
    return answer


def test_page_and_static_files_are_served_without_a_key(server, keyed_server):
    for srv in (server, keyed_server):
        with httpx.Client(base_url=srv.url) as c:
            r = c.get("/")
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            assert "default-src 'self'" in r.headers["content-security-policy"]
            assert '<script type="module" src="/static/app.js">' in r.text
            js = c.get("/static/app.js")
            assert js.status_code == 200 and "javascript" in js.headers["content-type"]
            assert c.get("/static/app.css").headers["content-type"].startswith("text/css")
            assert c.get("/static/nope.js").status_code == 404
            assert c.get("/health").status_code == 200 and c.get("/metrics").status_code == 200
            assert "/v1/ask" in c.get("/schema/openapi.json").json()["paths"]
    with httpx.Client(base_url=keyed_server.url) as c:
        assert c.get("/v1/collections").status_code == 401  # the API itself still needs the key


def test_a_cited_answer_streams_in_and_a_citation_opens_the_highlighted_span(page):
    with page.expect_response("**/v1/ask") as info:
        answer = ask(page, VACATION_Q)
    response = info.value
    assert response.headers["content-type"].startswith("text/event-stream")
    body = response.text()
    assert body.index("event: plan") < body.index("event: delta") < body.index("event: done")

    expect(answer).to_have_class(re.compile(r"\bfound\b"))
    expect(answer.locator(".answer-text")).to_contain_text("22")
    cites = answer.locator(".answer-text button.cite")
    assert cites.count() >= 1
    expect(answer.locator(".sources li").first).to_be_visible()
    expect(answer.locator(".sources li").first).to_contain_text("vacation-policy.txt")
    assert "/" not in answer.locator(".sources li .muted").first.inner_text()  # no server path

    cites.first.click()
    viewer = page.locator("#viewer")
    expect(viewer).to_be_visible()
    mark = viewer.locator("#viewer-text mark").first
    expect(mark).to_be_visible()
    marked, whole = mark.inner_text().strip(), viewer.locator("#viewer-text").inner_text()
    assert marked and marked in whole and len(whole) > len(marked)  # the span, in its surrounding text
    source = (SAMPLE / cites.first.get_attribute("data-doc")).read_text()
    assert " ".join(marked.split()) in " ".join(source.split())  # the very sentence of the file
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()


def test_a_follow_up_sends_the_earlier_turns(page):
    first = ask(page, VACATION_Q)
    expect(first).to_have_class(re.compile(r"\bfound\b"))
    with page.expect_request("**/v1/ask") as info:
        second = ask(page, "And how many days can be carried over?")
    sent = json.loads(info.value.post_data)
    assert [m["role"] for m in sent["history"]] == ["user", "assistant"]
    assert sent["history"][0]["content"] == VACATION_Q and "22" in sent["history"][1]["content"]
    assert sent["collection"] == COLLECTION
    expect(second).to_have_class(re.compile(r"\bfound\b"))
    expect(second.locator(".answer-text")).to_contain_text("5")
    expect(page.locator(".turn")).to_have_count(2)

    page.click("#new-chat")
    expect(page.locator(".turn")).to_have_count(0)


def test_an_off_topic_question_is_shown_as_not_found(page):
    answer = ask(page, "What is the boiling point of liquid nitrogen on Mars?")
    expect(answer).to_have_class(re.compile(r"\bnot-found\b"))
    expect(answer.locator(".nf-title")).to_contain_text("Not found")
    expect(answer.locator("button.cite")).to_have_count(0)
    related = answer.locator(".related li button")
    expect(related.first).to_be_visible()
    related.first.click()  # a related document opens, unhighlighted
    expect(page.locator("#viewer-text")).not_to_be_empty()
    expect(page.locator("#viewer-text mark")).to_have_count(0)
    page.click("#viewer-close")


def test_why_this_answer_shows_the_call_tree(page):
    answer = ask(page, "How many vacation days do new hires get, and who approves expenses over $500?")
    answer.locator("details.why > summary").click()
    assert "[object" not in answer.inner_text()  # sub-questions arrive as objects: shown by their text
    tree = answer.locator(".trace")
    expect(tree.locator(".trace-summary")).to_contain_text("steps")
    expect(tree.locator(".kind-retrieve").first).to_be_visible()
    expect(tree.locator(".stat", has_text=re.compile(r"\d+ spans")).first).to_be_visible()
    SCREENSHOT.parent.mkdir(exist_ok=True)  # the README's picture: an answer, its sources, its call tree
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOT))


def test_upload_drop_list_ask_and_delete_a_document(page):
    name = "web_" + uuid.uuid4().hex[:8]
    page.click("#tab-documents")
    page.fill("#new-collection-name", name)
    page.press("#new-collection-name", "Enter")
    expect(page.locator("#docs-collection")).to_have_text(name)
    expect(page.locator("#docs-empty")).to_be_visible()

    # drag and drop: a drop event carrying a file, as the browser sends it
    page.evaluate("""() => {
        const dt = new DataTransfer();
        dt.items.add(new File(["# Zephyr lab\\n\\nThe Zephyr lab door code is 4417 and it changes every Tuesday.\\n"],
                              "zephyr.md", {type: "text/markdown"}));
        document.getElementById("dropzone").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true}));
    }""")
    expect(page.locator("#upload-status")).to_contain_text("1 new")
    row = page.locator('#docs-table tr[data-id="zephyr.md"]')
    expect(row).to_be_visible()

    # a file the server cannot read: its message is shown
    page.set_input_files("#files", files=[{"name": "broken.pdf", "mimeType": "application/pdf",
                                           "buffer": b"%PDF-1.7 not really a pdf"}])
    expect(page.locator("#docs-error")).to_contain_text("broken.pdf")

    page.click("#tab-ask")
    answer = ask(page, "What is the Zephyr lab door code?")
    expect(answer.locator(".answer-text")).to_contain_text("4417")
    expect(answer.locator(".sources")).to_contain_text("zephyr")

    page.click("#tab-documents")
    delete = row.locator("button.danger")
    delete.click()
    expect(delete).to_have_text("Confirm delete")
    delete.click()  # the second click confirms
    expect(row).to_have_count(0)
    expect(page.locator("#upload-status")).to_contain_text("Deleted zephyr.md")


def test_a_folder_source_is_added_synced_and_removed_from_the_documents_view(browser, sources_server, source_root,
                                                                             tmp_path):
    folder = source_root / "handbook"
    (folder / "guides").mkdir(parents=True)
    (folder / "parking.md").write_text("# Parking\n\nVisitors park on level 2 of the Quill garage.\n")
    (folder / "guides" / "badges.md").write_text("# Badges\n\nA lost badge is replaced at the front desk.\n")
    context = browser.new_context(viewport={"width": 1180, "height": 860})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(sources_server.url + "/#documents")
    page.fill("#new-collection-name", "src_" + uuid.uuid4().hex[:8])
    page.press("#new-collection-name", "Enter")
    expect(page.locator("#sources-empty")).to_be_visible()

    def add_source(name: str, location: str, groups: str = "") -> None:
        if page.locator("#add-source").get_attribute("open") is None:
            page.click("#add-source > summary")
        page.fill("#source-name", name)
        page.select_option("#source-kind", "git")
        expect(page.locator("#source-branch")).to_be_visible()
        page.select_option("#source-kind", "folder")
        expect(page.locator("#source-branch")).to_be_hidden()  # a branch is for Git sources
        page.fill("#source-location", location)
        page.fill("#source-groups", groups)
        page.click("#source-form button[type=submit]")

    # added through the form: its first sync runs, its documents are listed with their paths
    add_source("handbook", str(folder), "staff, hr")
    item = page.locator('#sources-list li[data-source="handbook"]')
    expect(item.locator(".source-head")).to_contain_text(str(folder))
    expect(item.locator(".source-groups")).to_have_text("Readable by groups: hr, staff")
    last = item.locator(".source-last")
    expect(last).to_contain_text("2 added, 0 updated, 0 deleted, 0 unchanged, 0 failed")
    expect(last).to_contain_text("2 files")
    expect(last.locator(".sync-done")).to_have_text("done")
    expect(item.locator(".source-schedule")).to_contain_text("syncs when asked")
    row = page.locator('#docs-table tr[data-id="handbook/parking.md"]')
    expect(row).to_be_visible()
    expect(row.locator(".doc-source")).to_have_text("parking.md")  # the location in the folder
    expect(page.locator('#docs-table tr[data-id="handbook/guides/badges.md"]')).to_be_visible()

    # a file changed in the folder: Sync now updates that one document only
    (folder / "parking.md").write_text("# Parking\n\nSince May, visitors park on level 3 of the Quill garage.\n")
    item.get_by_role("button", name="Sync handbook now").click()
    expect(last).to_contain_text("0 added, 1 updated, 0 deleted, 1 unchanged, 0 failed")
    expect(item.locator("button.sync")).to_be_enabled()
    row.locator("button.link").click()
    expect(page.locator("#viewer-text")).to_contain_text("level 3")
    page.click("#viewer-close")

    # a folder that is gone: the sync fails, says why, and the documents stay
    folder.rename(source_root / "moved")
    item.get_by_role("button", name="Sync handbook now").click()
    expect(last.locator(".sync-failed")).to_have_text("failed")
    expect(last.locator(".error")).to_contain_text("does not exist or is not a folder")
    expect(item.locator(".source-progress")).to_have_text("")  # said once, in the last sync
    expect(page.locator("#docs-table tbody tr")).to_have_count(2)
    (source_root / "moved").rename(folder)

    # the server's reasons, next to the field they are about
    add_source("elsewhere", str(tmp_path))
    location_error = page.locator("#source-location-error")
    expect(location_error).to_be_visible()
    expect(location_error).to_contain_text("is not under a folder of source_roots")
    expect(page.locator("#source-location")).to_have_attribute("aria-invalid", "true")
    add_source("handbook", str(folder))
    expect(page.locator("#source-name-error")).to_contain_text("already has a source named 'handbook'")
    expect(location_error).to_be_hidden()
    expect(page.locator("#sources-list li")).to_have_count(1)

    # removed (two clicks), with its documents
    remove = item.locator("button.remove")
    remove.click()
    expect(remove).to_have_text("Confirm remove")
    remove.click()
    expect(item).to_have_count(0)
    expect(page.locator("#sources-status")).to_contain_text("Removed source handbook and its 2 documents")
    expect(page.locator("#sources-empty")).to_be_visible()
    expect(page.locator("#docs-table tbody tr")).to_have_count(0)
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


class QuietFiles(SimpleHTTPRequestHandler):
    """A folder served over HTTP, without a log line per request."""

    def log_message(self, *args: object) -> None:
        pass


def test_a_web_sources_pages_link_to_their_urls(browser, sources_server, tmp_path):
    (tmp_path / "index.html").write_text('<html><head><title>Canteen</title></head><body><p>The canteen opens '
                                         'at 11:30.</p><a href="menu.html">Menu</a></body></html>')
    (tmp_path / "menu.html").write_text("<html><head><title>Menu</title></head><body><p>Soup on Mondays.</p>"
                                        "</body></html>")
    site = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(tmp_path)))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    start = f"http://127.0.0.1:{site.server_address[1]}/"
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(sources_server.url + "/#documents")
        page.fill("#new-collection-name", "web_src_" + uuid.uuid4().hex[:8])
        page.press("#new-collection-name", "Enter")
        page.click("#add-source > summary")
        page.fill("#source-name", "canteen")
        page.select_option("#source-kind", "web")
        page.fill("#source-location", start)
        page.click("#source-form button[type=submit]")
        item = page.locator('#sources-list li[data-source="canteen"]')
        expect(item.locator(".source-last")).to_contain_text("2 added")
        expect(item.locator(".source-last")).to_contain_text("2 pages")
        link = page.locator("#docs-table a.doc-source", has_text="menu.html")
        expect(link).to_have_attribute("href", start + "menu.html")
    finally:
        context.close()
        site.shutdown()
        site.server_close()


def test_a_wrong_api_key_shows_the_error_and_the_right_one_is_kept(browser, keyed_server):
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(keyed_server.url + "/")
    expect(page.locator("#banner")).to_contain_text("missing API key")
    expect(page.locator("#api-key")).to_be_focused()

    page.fill("#api-key", "not-a-key")
    page.press("#api-key", "Enter")
    expect(page.locator("#banner")).to_contain_text("invalid API key")

    expect(page.locator("#api-key")).to_be_focused()  # asked again
    page.fill("#api-key", "key-acme")
    page.click("#key-form button[type=submit]")
    expect(page.locator("#banner")).to_be_hidden()
    expect(page.locator("#collection")).to_have_value("handbook")  # acme's own name, no tenant prefix

    page.reload()  # the key is kept in the browser
    expect(page.locator("#collection")).to_have_value("handbook")
    expect(page.locator("#banner")).to_be_hidden()
    answer = ask(page, VACATION_Q)
    expect(answer.locator(".answer-text")).to_contain_text("22")
    context.close()


WIDER_THAN_VIEWPORT = """() => {
  const w = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > w + 0.5 && e.getClientRects().length)
    .slice(0, 8).map(e => `${e.tagName.toLowerCase()}.${e.className}: ${Math.round(e.getBoundingClientRect().right)}px`);
}"""


def assert_no_sideways_scrolling(page: Page, width: int) -> None:
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, f"page is {scroll_width}px wide: {page.evaluate(WIDER_THAN_VIEWPORT)}"


@pytest.mark.parametrize("width", [320, 380])
def test_narrow_screen_and_keyboard(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 760})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(server.url + "/")
    page.select_option("#collection", COLLECTION)
    assert_no_sideways_scrolling(page, width)
    page.keyboard.press("Tab")
    expect(page.locator("a.skip")).to_be_focused()
    page.focus("#question")
    page.keyboard.type(VACATION_Q)
    page.keyboard.press("Enter")
    answer = page.locator("article.answer")
    expect(answer).to_have_class(re.compile(r"\bfound\b"))
    answer.locator("button.cite").first.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#viewer mark").first).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()
    assert_no_sideways_scrolling(page, width)
    context.close()
