// Thumbs up / down under a finished answer, and an optional comment:
// POST /v1/answers/{trace_id}/feedback. Rating again replaces the earlier rating (per API key).

import { h } from "./dom.js";

const MAX_COMMENT = 2000;
// Material's "thumb_up" (Apache 2.0), drawn inline: no emoji font needed; down is it turned over
const THUMB = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 " +
  "7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";

function thumbIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", THUMB);
  svg.append(path);
  return svg;
}

export function feedbackBar(result, api) {
  const status = h("span", { class: "fb-status muted", role: "status" });
  const thumb = (rating, label) => h("button", {
    type: "button", class: `thumb ${rating}`, "data-rating": rating, "aria-pressed": "false",
    "aria-label": label, title: label, onclick: () => send(rating),
  }, thumbIcon());
  const up = thumb("up", "Good answer");
  const down = thumb("down", "Bad answer");
  const comment = h("textarea", {
    class: "fb-comment", rows: "2", maxlength: String(MAX_COMMENT), "aria-label": "Comment on this answer",
    placeholder: "What was wrong or missing? (optional)",
  });
  const form = h("form", { class: "fb-form", hidden: true },
    comment, h("button", { type: "submit" }, "Send comment"));
  let rating = null;

  async function send(value, text = "") {
    status.classList.remove("error");
    try {
      await api(`/v1/answers/${encodeURIComponent(result.trace_id)}/feedback`,
        { method: "POST", json: text ? { rating: value, comment: text } : { rating: value } });
    } catch (e) {
      status.classList.add("error");
      status.textContent = `The rating was not saved: ${e.message}`;
      return;
    }
    rating = value;
    up.setAttribute("aria-pressed", String(value === "up"));
    down.setAttribute("aria-pressed", String(value === "down"));
    status.textContent = text ? "Thanks, your comment was sent." : `Thanks, rated ${value}.`;
    form.hidden = false;
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = comment.value.trim();
    if (text && rating) send(rating, text);
  });
  return h("div", { class: "feedback" }, h("span", { class: "muted" }, "Was this helpful?"), up, down, status, form);
}
