// The source viewer: a document's text with the cited chunk tinted and the quoted sentences
// highlighted, scrolled into view. Falls back to the chunk the citation carries when the full
// text cannot be fetched.

import { api, docPath } from "./api.js";
import { clear, h } from "./dom.js";

const dialog = () => document.getElementById("viewer");

export function initViewer() {
  document.getElementById("viewer-close").addEventListener("click", () => dialog().close());
  dialog().addEventListener("click", (e) => { if (e.target === dialog()) dialog().close(); }); // backdrop
}

// open({collection, documentId, title, source, citation?}); citation has start/end/text/quotes
export async function openDocument({ collection, documentId, title, source, citation }) {
  const d = dialog();
  const textBox = document.getElementById("viewer-text");
  const note = document.getElementById("viewer-note");
  document.getElementById("viewer-title").textContent =
    citation ? `[${citation.n}] ${title || documentId}` : title || documentId;
  document.getElementById("viewer-source").textContent = source || documentId;
  note.hidden = true;
  clear(textBox).append(h("p", { class: "muted" }, "Loading…"));
  if (!d.open) d.showModal();

  let text, offset = 0;
  try {
    const doc = await api(docPath(collection, documentId));
    text = doc.text;
    if (typeof text !== "string") throw new Error("the server sent no text for this document");
  } catch (e) {
    if (!citation) {
      clear(textBox).append(h("p", { class: "error", role: "alert" }, `Could not load the document: ${e.message}`));
      return;
    }
    text = citation.text;
    offset = citation.start || 0;
    note.textContent = `Showing the cited passage only (the full document could not be loaded: ${e.message}).`;
    note.hidden = false;
  }
  clear(textBox).append(...highlighted(text, offset, citation));
  const mark = textBox.querySelector("mark") || textBox.querySelector(".chunk");
  if (mark) mark.scrollIntoView({ block: "center" });
  else textBox.scrollTop = 0;
}

// Nodes for `text` (which starts at document offset `offset`): the cited chunk in a tinted span,
// each quoted range in a <mark>.
function highlighted(text, offset, citation) {
  const clamp = (v) => Math.max(0, Math.min(text.length, v - offset));
  const chunk = citation ? [clamp(citation.start), clamp(citation.end)] : null;
  let quotes = (citation?.quotes || []).map(([a, b]) => [clamp(a), clamp(b)]).filter(([a, b]) => b > a);
  if (citation && !quotes.length && chunk && chunk[1] > chunk[0]) quotes = [chunk]; // no quote: mark the chunk
  quotes.sort((a, b) => a[0] - b[0]);
  const cuts = new Set([0, text.length]);
  for (const [a, b] of [...quotes, ...(chunk ? [chunk] : [])]) { cuts.add(a); cuts.add(b); }
  const points = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const [a, b] = [points[i], points[i + 1]];
    if (b <= a) continue;
    const piece = text.slice(a, b);
    const inQuote = quotes.some(([qa, qb]) => a >= qa && b <= qb);
    const inChunk = chunk && a >= chunk[0] && b <= chunk[1];
    if (inQuote) out.push(h("mark", { class: inChunk ? "quote in-chunk" : "quote" }, piece));
    else if (inChunk) out.push(h("span", { class: "chunk" }, piece));
    else out.push(piece);
  }
  return out;
}
