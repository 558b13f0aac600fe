"""A loopback server that speaks arXiv's Atom API, serves PDFs, answers DOI content negotiation, and misbehaves
on demand (HTML instead of a PDF, slow answers, 503s), for the sources tests. PDFs are made with PyMuPDF."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

import pymupdf


def make_pdf(title: str, pages: int = 1, body: str = "", authors: str = "") -> bytes:
    """A small real PDF whose first page shows `title` (and optional authors and body text)."""
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        if n == 0:
            page.insert_text((72, 90), title, fontsize=16)
            if authors:
                page.insert_text((72, 115), authors, fontsize=11)
        page.insert_text((72, 160), body or f"Page {n + 1} of {title}.", fontsize=10)
    doc.set_metadata({"title": title, "author": authors})
    data = doc.tobytes()
    doc.close()
    return data


@dataclass
class Paper:
    arxiv: str
    title: str
    abstract: str
    authors: list[str]
    published: str = "2024-01-15T00:00:00Z"
    doi: str | None = None
    version: int = 1
    pdfs: dict[int, bytes] = field(default_factory=dict)     # the PDF of each version (default: a made-up one)


@dataclass
class Catalog:
    papers: dict[str, Paper] = field(default_factory=dict)
    dois: dict[str, dict] = field(default_factory=dict)      # DOI -> CSL-JSON item
    requests: list[tuple[float, str]] = field(default_factory=list)
    fail_next: int = 0                                        # answer 503 this many times first
    retry_after: str | None = None                            # ... with this Retry-After header
    slow_seconds: float = 2.0

    def add(self, *papers: Paper) -> None:
        for p in papers:
            self.papers[p.arxiv] = p


def atom(entries: list[Paper], base: str) -> str:
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom" '
           'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">',
           f"<title>ArXiv Query</title><opensearch:totalResults>{len(entries)}</opensearch:totalResults>"]
    for p in entries:
        out.append("<entry>")
        out.append(f"<id>http://arxiv.org/abs/{p.arxiv}v{p.version}</id>")
        out.append(f"<updated>{p.published}</updated><published>{p.published}</published>")
        out.append(f"<title>{escape(p.title)}</title><summary>  {escape(p.abstract)}\n</summary>")
        for a in p.authors:
            out.append(f"<author><name>{escape(a)}</name></author>")
        if p.doi:
            out.append(f"<arxiv:doi>{escape(p.doi)}</arxiv:doi>")
        out.append(f'<link href="http://arxiv.org/abs/{p.arxiv}v{p.version}" rel="alternate" type="text/html"/>')
        out.append(f'<link title="pdf" href="{base}/pdf/{p.arxiv}v{p.version}" rel="related" type="application/pdf"/>')
        out.append('<category term="cs.DC" scheme="http://arxiv.org/schemas/atom"/>')
        out.append("</entry>")
    out.append("</feed>")
    return "\n".join(out)


def _matches(p: Paper, query: str) -> int:
    words = [w.split(":", 1)[-1].lower() for w in query.replace("AND", " ").replace("OR", " ").split() if w]
    text = f"{p.title} {p.abstract}".lower()
    return sum(text.count(w) for w in words)


class _Handler(BaseHTTPRequestHandler):
    catalog: Catalog
    base: str

    def log_message(self, *args):   # quiet
        pass

    def _send(self, code: int, body: bytes, ctype: str, headers: dict | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (the timeout tests do exactly that)

    def do_GET(self):
        cat = self.catalog
        cat.requests.append((time.monotonic(), self.path))
        url = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if cat.fail_next > 0:
            cat.fail_next -= 1
            return self._send(503, b"busy", "text/plain",
                              {"Retry-After": cat.retry_after} if cat.retry_after is not None else None)
        if url.path == "/api/query":
            if "id_list" in q:
                ids = [i.split("v")[0] if "." in i else i for i in q["id_list"].split(",")]
                entries = [cat.papers[i] for i in ids if i in cat.papers]
            else:
                query = q.get("search_query", "")
                scored = [(_matches(p, query), p) for p in cat.papers.values()]
                entries = [p for s, p in sorted(scored, key=lambda t: -t[0]) if s > 0]
                entries = entries[int(q.get("start", 0)):][:int(q.get("max_results", 10))]
            return self._send(200, atom(entries, self.base).encode(), "application/atom+xml")
        if url.path.startswith("/pdf/"):
            ax = unquote(url.path[len("/pdf/"):]).removesuffix(".pdf")
            version = None
            if "." in ax and "v" in ax:
                ax, _, v = ax.rpartition("v")
                version = int(v) if v.isdigit() else None
            p = cat.papers.get(ax)
            if not p or (version or 0) > p.version:
                return self._send(404, b"not found", "text/plain")
            pdf = p.pdfs.get(version or p.version)
            return self._send(200, pdf or make_pdf(p.title, pages=2, authors=", ".join(p.authors)), "application/pdf")
        if url.path.startswith("/doi/"):
            doi = unquote(url.path[len("/doi/"):]).lower()
            item = cat.dois.get(doi)
            if not item:
                return self._send(404, b"DOI not found", "text/plain")
            if "csl+json" not in self.headers.get("Accept", ""):
                return self._send(200, b"<html><body>landing page</body></html>", "text/html")
            return self._send(200, json.dumps(item).encode(), "application/vnd.citationstyles.csl+json")
        if url.path == "/files/paper.pdf":
            return self._send(200, make_pdf("A Direct Download", authors="Ada Lovelace"), "application/pdf")
        if url.path == "/files/landing.pdf":   # a "PDF" link that serves a login page
            return self._send(200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html; charset=utf-8")
        if url.path == "/files/slow.pdf":
            time.sleep(cat.slow_seconds)
            return self._send(200, make_pdf("Slow"), "application/pdf")
        return self._send(404, b"not found", "text/plain")


class LoopbackServer:
    """`with LoopbackServer() as srv:` serves on 127.0.0.1; `srv.url`, `srv.catalog`."""

    def __init__(self, catalog: Catalog | None = None):
        self.catalog = catalog or Catalog()

    def __enter__(self) -> "LoopbackServer":
        handler = type("Handler", (_Handler,), {"catalog": self.catalog})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        handler.base = self.url
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def settings_env(self, monkeypatch, delay: float = 0.0, timeout: float = 5.0, retries: int = 2) -> None:
        """Point papervault's arXiv and DOI settings at this server."""
        monkeypatch.setenv("PAPERVAULT_ARXIV_API_URL", f"{self.url}/api/query")
        monkeypatch.setenv("PAPERVAULT_ARXIV_PDF_URL", f"{self.url}/pdf/")
        monkeypatch.setenv("PAPERVAULT_ARXIV_DELAY", str(delay))
        monkeypatch.setenv("PAPERVAULT_ARXIV_TIMEOUT", str(timeout))
        monkeypatch.setenv("PAPERVAULT_ARXIV_RETRIES", str(retries))
        monkeypatch.setenv("PAPERVAULT_SOURCES_DOI_URL", f"{self.url}/doi/")
        monkeypatch.setenv("PAPERVAULT_SOURCES_TIMEOUT", str(timeout))
        monkeypatch.setenv("PAPERVAULT_SOURCES_RETRIES", str(retries))
