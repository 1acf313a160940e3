"""The web page in a real headless Chromium (Debian's, driven by Playwright) against a real server
on loopback over the sample corpus: a streamed cited answer, the cited span highlighted in its
document, a follow-up, a not-found answer, upload -> ask -> delete, and a wrong API key.

The browser is /usr/bin/chromium (`make install` puts it there with apt-get); never downloaded."""

from __future__ import annotations

import json
import re
import uuid
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


@pytest.fixture(scope="module")
def server(assistant):
    with LiveServer(open_settings(assistant), assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def keyed_server(assistant):
    with LiveServer(open_settings(assistant, api_keys=KEYS), assistant) as srv:
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
