// The /v1 API from the browser: JSON calls, the answer stream (SSE over a POST), uploads with
// progress. Every failure becomes an ApiError carrying the server's {type, message, field}.

const KEY_STORAGE = "rag-rlm.api-key";

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(status, type, message, field) {
    super(message);
    this.status = status;
    this.type = type;
    this.field = field;
  }
}

function headers(extra = {}) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : { ...extra };
}

// The server's error body, or a plain description when the body is not ours (a proxy's page).
function errorFrom(status, text) {
  try {
    const e = JSON.parse(text).error;
    if (e && e.message) return new ApiError(status, e.type || "error", e.message, e.field);
  } catch { /* not JSON */ }
  return new ApiError(status, "http_error", `HTTP ${status}${text ? ": " + text.slice(0, 200) : ""}`);
}

async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "network_error", `the server could not be reached (${e.message})`);
  }
}

export async function api(path, { method = "GET", json, signal } = {}) {
  const init = { method, signal, headers: headers(json === undefined ? {} : { "Content-Type": "application/json" }) };
  if (json !== undefined) init.body = JSON.stringify(json);
  const r = await send(path, init);
  if (!r.ok) throw errorFrom(r.status, await r.text());
  return r.json();
}

export const enc = encodeURIComponent;
// document ids may contain "/" (a path in the upload): keep the slashes, escape the rest
export const docPath = (collection, id) =>
  `/v1/collections/${enc(collection)}/documents/${id.split("/").map(enc).join("/")}`;

// POST /v1/ask with "stream": true; calls onEvent(kind, data) per server-sent event.
export async function streamAsk(body, { signal, onEvent }) {
  const r = await send("/v1/ask", {
    method: "POST", signal, body: JSON.stringify({ ...body, stream: true }),
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
  });
  if (!r.ok) throw errorFrom(r.status, await r.text());
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      dispatch(block, onEvent);
    }
  }
  if (buffer.trim()) dispatch(buffer, onEvent);
}

function dispatch(block, onEvent) {
  let kind = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return;
  let parsed;
  try { parsed = JSON.parse(data.join("\n")); } catch { parsed = data.join("\n"); }
  onEvent(kind, parsed);
}

// Multipart upload (field "files", repeated) with upload progress; resolves {status, body}.
export function upload(collection, files, onProgress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/v1/collections/${enc(collection)}/documents`);
    for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve({ status: xhr.status, body: JSON.parse(xhr.responseText) });
      else reject(errorFrom(xhr.status, xhr.responseText));
    };
    xhr.onerror = () => reject(new ApiError(0, "network_error", "the upload did not reach the server"));
    xhr.send(form);
  });
}
