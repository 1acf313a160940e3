"""The page's answer feedback (thumbs and a comment) and its Insights view, in the real headless
Chromium of tests/test_web.py against a real server on loopback over the sample corpus."""

from __future__ import annotations

import json
import re

import pytest
import test_web
from playwright.sync_api import expect
from test_server_support import COLLECTION, LiveServer, open_settings, shared_assistant
from test_web import SCREENSHOT, VACATION_Q, ask

# the same Chromium and page fixtures as test_web.py, over this module's server
browser, page = test_web.browser, test_web.page
INSIGHTS_SCREENSHOT = SCREENSHOT.with_name("insights.png")  # the README's picture of the view
CHOIR = ["Does the company have a choir I can join?", "Is there an employee choir or singing group?"]


@pytest.fixture(scope="module")
def server(pg_url, embedder, tmp_path_factory):
    assistant = shared_assistant(pg_url, tmp_path_factory.mktemp("web_insights_data"), embedder)
    with LiveServer(open_settings(assistant), assistant) as srv:
        yield srv


def test_thumbs_rate_an_answer_and_a_comment_goes_with_the_rating(page, server):
    answer = ask(page, VACATION_Q)
    down, up = answer.locator("button.thumb.down"), answer.locator("button.thumb.up")
    expect(down).to_have_attribute("aria-pressed", "false")
    with page.expect_response("**/feedback") as info:
        down.click()
    sent = info.value
    assert sent.status == 200 and json.loads(sent.request.post_data) == {"rating": "down"}
    trace_id = sent.request.url.split("/v1/answers/")[1].split("/")[0]
    expect(down).to_have_attribute("aria-pressed", "true")
    expect(up).to_have_attribute("aria-pressed", "false")
    expect(answer.locator(".fb-status")).to_have_text("Thanks, rated down.")

    answer.locator(".fb-comment").fill("Part-timers are not mentioned.")
    with page.expect_request("**/feedback") as info:
        answer.locator(".fb-form button[type=submit]").click()
    assert json.loads(info.value.post_data) == {"rating": "down", "comment": "Part-timers are not mentioned."}
    expect(answer.locator(".fb-status")).to_have_text("Thanks, your comment was sent.")

    with server.client() as c:
        rated = c.get("/v1/insights", params={"collection": COLLECTION}).json()["rated_down"]
    mine = next(a for a in rated if a["trace_id"] == trace_id)
    assert mine["comments"] == ["Part-timers are not mentioned."] and mine["question"] == VACATION_Q

    up.click()  # changing one's mind replaces the rating
    expect(up).to_have_attribute("aria-pressed", "true")
    expect(down).to_have_attribute("aria-pressed", "false")


def test_the_insights_view_shows_what_the_documents_miss(page, server):
    for q in CHOIR:
        expect(ask(page, q)).to_have_class(re.compile(r"\bnot-found\b"))
    found = ask(page, VACATION_Q)
    with page.expect_response("**/feedback"):
        found.locator("button.thumb.down").click()

    with page.expect_response("**/v1/insights?*"):
        page.click("#tab-insights")
    expect(page.locator("#view-insights")).to_be_visible()
    expect(page.locator("#view-ask")).to_be_hidden()
    expect(page.locator("#tab-insights")).to_have_attribute("aria-current", "page")
    expect(page.locator("#insights-collection")).to_have_text(COLLECTION)
    expect(page.locator("#insights-summary")).to_contain_text("not found")

    choir = page.locator("#insights-missing li.group", has=page.locator(".label", has_text=re.compile("choir")))
    expect(choir).to_have_count(1)
    expect(choir.locator(".count")).to_have_text(re.compile(r"^[2-9]\d*×$"))
    choir.locator("summary").click()
    other = next(q for q in CHOIR if q != choir.locator(".label").inner_text())
    expect(choir.locator("details li", has_text=other)).to_be_visible()

    rated = page.locator("#insights-rated li.rated-answer", has_text=VACATION_Q).first
    expect(rated).to_be_visible()
    expect(rated.locator(".cites-line")).to_contain_text("Vacation policy")
    expect(page.locator("#insights-cited li", has_text="Vacation policy")).to_have_count(1)
    expect(page.locator("#insights-never li").first).to_be_visible()

    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(INSIGHTS_SCREENSHOT))
    rated.locator(".cites-line button.link").first.click()  # a cited document opens in the viewer
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#viewer-title")).to_have_text("Vacation policy")
    page.keyboard.press("Escape")

    with page.expect_response("**/v1/insights?*since=7d*"):
        page.select_option("#insights-since", "7d")
    page.click("#tab-ask")
    expect(page.locator("#view-insights")).to_be_hidden()
