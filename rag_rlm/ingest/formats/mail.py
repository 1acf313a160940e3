"""E-mail through the standard library: a message (.eml) is a document titled by its subject,
with sender, recipients and date in its first line and its text body (text/plain, else the HTML
part through the HTML parser). Each attachment is parsed by its own type into a document of its
own whose id links to the message ("msg.eml#report.pdf"). A mailbox (.mbox) gives one document
per message ("inbox.mbox#3", its attachments "inbox.mbox#3#report.pdf")."""

from __future__ import annotations

import email
import mimetypes
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from email import policy
from email.message import EmailMessage
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .base import Parsed, ParseError, document, one_line

if TYPE_CHECKING:
    from ..ocr import OcrOptions

MAX_NESTING = 3  # a forwarded message inside a forwarded message...: deeper ones are not read
_HEADERS = ("From", "To", "Cc", "Date")
_BOM = b"\xef\xbb\xbf"


def parse_eml(path: Path, doc_id: str, data: bytes, *, max_bytes: int | None = None, ocr: OcrOptions | None = None
              ) -> Parsed:
    """`max_bytes` and `ocr` are passed on to the attachments (their own size and zip limits, a
    scanned PDF's OCR)."""
    return _message(path, doc_id, data, {"max_bytes": max_bytes, "ocr": ocr}, depth=0)


def parse_mbox(path: Path, doc_id: str, data: bytes, *, max_bytes: int | None = None, ocr: OcrOptions | None = None
               ) -> Parsed:
    """A message that cannot be read fails on its own, like a bad JSONL line."""
    out = Parsed([])
    for number, raw in enumerate(_mbox_messages(path, data), start=1):
        try:
            parsed = _message(path, f"{doc_id}#{number}", raw, {"max_bytes": max_bytes, "ocr": ocr}, depth=0)
        except ParseError as e:
            out.errors.append(ParseError(f"{path}#{number}", f"message {number}: {e.reason}"))
            continue
        out.documents += parsed.documents
        out.errors += parsed.errors
    if not out.documents and not out.errors:
        raise ParseError(str(path), "not an mbox: no message starts with a 'From ' line")
    return out


def _mbox_messages(path: Path, data: bytes) -> list[bytes]:
    import mailbox

    # mailbox reads only files; the bytes given may come from an upload, not from `path`
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.mbox"
        copy.write_bytes(data)
        box = mailbox.mbox(copy, create=False)
        try:
            return [box.get_bytes(key) for key in box.iterkeys()]
        except Exception as e:  # mailbox raises plain errors on damaged files
            raise ParseError(str(path), f"corrupt mbox: {type(e).__name__}: {e}") from None
        finally:
            box.close()


def _message(path: Path, doc_id: str, raw: bytes, options: dict[str, Any], depth: int) -> Parsed:
    """`options`: parse_file's keywords for the attachments (max_bytes, ocr)."""
    headers, text, attachments = _read(path, doc_id, raw)
    names = _unique([name for name, _ in attachments])
    subject = headers.get("Subject") or "(no subject)"
    head = [f"{k}: {v}" for k, v in headers.items() if k in _HEADERS]
    head += [f"Attachments: {', '.join(names)}"] if names else []
    out = document(path, doc_id, raw, subject, "\n\n".join(b for b in (f"# {subject}", "; ".join(head), text) if b))
    meta = {k.lower().replace("-", "_"): v for k, v in headers.items() if k != "Subject"}
    out.documents[0] = replace(out.documents[0], metadata={**meta, "attachments": names})
    for name, (_, part) in zip(names, attachments, strict=True):
        _attach(out, path, doc_id, name, part, options, depth)
    return out


def _read(path: Path, doc_id: str, raw: bytes) -> tuple[dict[str, str], str, list[tuple[str, EmailMessage]]]:
    """The message's headers, body text and attached parts."""
    try:
        msg = email.message_from_bytes(raw, policy=policy.default)
        headers = {name: one_line(str(msg[name]).replace("\x00", ""))
                   for name in (*_HEADERS, "Subject", "Message-ID") if msg[name]}
        if not headers:  # the email parser takes any bytes; without one header this is no message
            raise ParseError(str(path), "not an e-mail message: no From, To, Subject or Date header")
        body = msg.get_body(preferencelist=("plain", "html"))
        return headers, _body_text(path, doc_id, body) if body is not None else "", list(_attachments(msg, body))
    except ParseError:
        raise
    except Exception as e:  # the email package is lenient; what still raises means a broken message
        raise ParseError(str(path), f"corrupt e-mail: {type(e).__name__}: {e}") from None


def _body_text(path: Path, doc_id: str, body: EmailMessage) -> str:
    if body.get_content_type() == "text/html":
        from ..parsers import parse_html  # parsers imports this module to register it

        # a UTF-8 BOM makes the HTML parser trust the decoded text over a stale <meta charset>
        html = _BOM + _decoded(body).encode("utf-8")
        try:
            return parse_html(path, doc_id, html).documents[0].text
        except ParseError:  # an empty or script-only HTML body: the message still has its headers
            return ""
    return _decoded(body).replace("\r\n", "\n").strip()


def _decoded(part: EmailMessage) -> str:
    try:
        text = part.get_content()
    except (LookupError, UnicodeError):  # an unknown or wrong charset: the bytes as UTF-8, kept readable
        text = (part.get_payload(decode=True) or b"").decode("utf-8", errors="replace")
    return text.replace("\x00", "")  # PostgreSQL text cannot hold U+0000


def _attachments(msg: EmailMessage, body: EmailMessage | None) -> Iterator[tuple[str, EmailMessage]]:
    """(name, part) of every attached file in order: parts that are attachments or carry a file
    name, and attached messages, which are not descended into here (they are parsed as .eml)."""
    count = 0
    for part in _leaves(msg):
        if part is body:
            continue
        forwarded = part.get_content_type() == "message/rfc822"
        if not (forwarded or part.is_attachment() or part.get_filename()):
            continue  # the other half of a text/html alternative, an inline part of the body
        count += 1
        name = PurePosixPath((part.get_filename() or "").replace("\\", "/")).name
        if not name:
            ext = ".eml" if forwarded else mimetypes.guess_extension(part.get_content_type()) or ".bin"
            name = f"attachment-{count}{ext}"
        yield name, part


def _leaves(part: EmailMessage) -> Iterator[EmailMessage]:
    if part.get_content_type() == "message/rfc822":
        yield part
    elif part.is_multipart():
        for inner in part.iter_parts():
            yield from _leaves(inner)  # type: ignore[arg-type]
    else:
        yield part


def _unique(names: list[str]) -> list[str]:
    """Two attachments of one name get distinct ids: "a.pdf", "a-2.pdf"."""
    seen: set[str] = set()
    out = []
    for name in names:
        stem, suffix, n = PurePosixPath(name).stem, PurePosixPath(name).suffix, 1
        while name in seen:
            n += 1
            name = f"{stem}-{n}{suffix}"
        seen.add(name)
        out.append(name)
    return out


def _attach(out: Parsed, path: Path, doc_id: str, name: str, part: EmailMessage,
            options: dict[str, Any], depth: int) -> None:
    """Parse one attachment by its own type into `out`; a type no parser reads is only named in
    the message's line of attachments (a logo, a calendar invite); one that fails is an error of
    its own and the message still goes in."""
    from ..parsers import PARSERS, parse_file  # parsers imports this module to register it

    where, aid = Path(f"{path}#{name}"), f"{doc_id}#{name}"
    suffix = where.suffix.lower()
    if suffix not in PARSERS or suffix == ".mbox" or (suffix == ".eml" and depth >= MAX_NESTING):
        return
    try:
        if part.get_content_type() == "message/rfc822":
            parsed = _message(where, aid, part.get_content().as_bytes(), options, depth + 1)
        else:
            payload = part.get_payload(decode=True) or b""
            if suffix == ".eml":
                parsed = _message(where, aid, payload, options, depth + 1)
            else:
                parsed = parse_file(where, aid, payload, **options)
    except ParseError as e:
        out.errors.append(e)
        return
    for doc in parsed.documents:  # the file the attachment came in is its source (prune, citations)
        if doc.id == aid:  # a title made from the file name reads "agenda.pdf", not "msg.eml#agenda"
            doc = replace(doc, title=name if doc.title == where.stem else doc.title,
                          metadata={**doc.metadata, "attachment_of": doc_id})
        out.documents.append(replace(doc, source=str(path)))
    out.errors += parsed.errors
