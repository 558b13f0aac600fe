"""HTTP for sources: polite rate limits, retries with backoff, timeouts, a size cap, and PDFs checked to be PDFs.

Every failure a user can hit (timeout, HTML instead of a PDF, too large, 404) is a `SourceError` with one line
that says what happened and what to do.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from papervault.errors import SourceError
from papervault.retrying import RetryLater, retry_after, retrying

_last_request: dict[str, float] = {}
_lock = threading.Lock()


@dataclass
class HttpPolicy:
    """How to talk to one service: seconds between requests, per-request timeout, attempts, size cap."""

    delay: float = 0.0
    timeout: float = 30.0
    retries: int = 3
    max_bytes: int = 100 * 2**20
    user_agent: str = "papervault/0.1"
    backoff: float = 1.0
    too_big: str = "download it yourself and add the file, or raise max_pdf_mb"   # the fix past max_bytes


def _wait_turn(host: str, delay: float) -> None:
    """Block until `delay` seconds have passed since the last request to `host` (arXiv asks for 3 s)."""
    if delay <= 0:
        return
    with _lock:
        now = time.monotonic()
        ready = _last_request.get(host, 0.0) + delay
        _last_request[host] = max(now, ready)
    if ready > now:
        time.sleep(ready - now)


def get(url: str, policy: HttpPolicy, *, accept: str | None = None, params: dict | None = None,
        stream_to: Path | None = None, expect_pdf: bool = False) -> tuple[bytes, str]:
    """GET `url` with retries; returns (body, content type). With `stream_to`, the body goes to that file instead.

    Server errors (5xx, 429) and timeouts are retried with exponential backoff, or after the server's
    `Retry-After` when it sends one (`papervault.retrying`); 4xx are not.
    """
    host = urlsplit(url).netloc
    headers = {"User-Agent": policy.user_agent}
    if accept:
        headers["Accept"] = accept
    attempts = max(1, policy.retries)
    try:
        for attempt in retrying(attempts, policy.backoff):
            with attempt:
                return _get_once(url, host, policy, headers, params, stream_to, expect_pdf)
    except RetryLater as exc:
        raise SourceError(f"{url}: {exc.reason} ({attempts} attempts)",
                          fix="check the address and your connection, or download the file and add it") from None
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _get_once(url: str, host: str, policy: HttpPolicy, headers: dict, params: dict | None, stream_to: Path | None,
              expect_pdf: bool) -> tuple[bytes, str]:
    """One attempt; `RetryLater` for what may pass (5xx, 429, a timeout, a dropped connection)."""
    _wait_turn(host, policy.delay)
    try:
        with httpx.Client(timeout=policy.timeout, follow_redirects=True, headers=headers) as client:
            with client.stream("GET", url, params=params) as resp:
                if resp.status_code == 429 or resp.status_code >= 500:
                    raise RetryLater(f"HTTP {resp.status_code}", after=retry_after(resp.headers.get("retry-after")))
                if resp.status_code >= 400:
                    raise SourceError(f"{url}: HTTP {resp.status_code}", fix="check the address")
                ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                length = int(resp.headers.get("content-length") or 0)
                if length > policy.max_bytes:
                    raise SourceError(f"{url}: {length / 2**20:.0f} MB is over the {policy.max_bytes / 2**20:.0f} MB limit",
                                      fix=policy.too_big)
                return _body(resp, url, ctype, policy, stream_to, expect_pdf), ctype
    except httpx.TimeoutException:
        raise RetryLater(f"timed out after {policy.timeout:g} s") from None
    except httpx.TransportError as exc:
        raise RetryLater(f"connection failed ({type(exc).__name__})") from None


def _body(resp: httpx.Response, url: str, ctype: str, policy: HttpPolicy, stream_to: Path | None,
          expect_pdf: bool) -> bytes:
    chunks: list[bytes] = []
    total = 0
    out = None
    first = b""
    try:
        if stream_to is not None:
            stream_to.parent.mkdir(parents=True, exist_ok=True)
            out = open(stream_to.with_suffix(".part"), "wb")
        for chunk in resp.iter_bytes(1 << 16):
            if not first:
                first = chunk[:1024]
                if expect_pdf and b"%PDF-" not in first:
                    kind = "an HTML page" if (b"<html" in first.lower() or b"<!doctype" in first.lower()
                                             or "html" in ctype) else f"{ctype or 'something'}"
                    raise SourceError(f"{url}: returned {kind}, not a PDF",
                                      fix="use the PDF's own link (or download it in a browser and add the file)")
            total += len(chunk)
            if total > policy.max_bytes:
                raise SourceError(f"{url}: more than {policy.max_bytes / 2**20:.0f} MB",
                                  fix=policy.too_big)
            if out is not None:
                out.write(chunk)
            else:
                chunks.append(chunk)
        if expect_pdf and not first:
            raise SourceError(f"{url}: returned an empty body, not a PDF", fix="try again later")
    except BaseException:
        if out is not None:
            out.close()
            stream_to.with_suffix(".part").unlink(missing_ok=True)
        raise
    if out is not None:
        out.close()
        stream_to.with_suffix(".part").replace(stream_to)
    return b"".join(chunks)


def download_pdf(url: str, dest_dir: Path, policy: HttpPolicy, name: str | None = None) -> Path:
    """Download a PDF into `dest_dir` (named by `name` or a hash of the URL); reuses an earlier download."""
    dest_dir = Path(dest_dir)
    stem = name or hashlib.sha256(url.encode()).hexdigest()[:16]
    target = dest_dir / f"{stem.replace('/', '_')}.pdf"
    if target.is_file() and target.stat().st_size > 0:
        return target
    get(url, policy, accept="application/pdf", stream_to=target, expect_pdf=True)
    return target


def sources_policy(settings) -> HttpPolicy:
    s = settings.sources
    return HttpPolicy(delay=0.0, timeout=s.timeout, retries=s.retries, max_bytes=int(s.max_pdf_mb * 2**20),
                      user_agent=s.user_agent)


# An answer of a metadata service (an arXiv Atom feed, a Crossref or OpenAlex JSON record, a DOI's CSL-JSON) is
# read up to this many bytes; a longer one is refused as a whole. An arXiv search page of 100 entries is about
# 300 KB, one Crossref record with its reference list rarely 1 MB. (The values it holds are bounded by
# `papervault.sources.limits`.)
MAX_FEED_BYTES = 8 << 20


def feed_policy(policy: HttpPolicy) -> HttpPolicy:
    """`policy` for a metadata answer (Atom feed, JSON record): its body bounded by `MAX_FEED_BYTES`."""
    return replace(policy, max_bytes=min(policy.max_bytes, MAX_FEED_BYTES),
                   too_big="no metadata answer is that large: the service (or its address in the settings) is wrong")


def arxiv_policy(settings) -> HttpPolicy:
    s = settings.arxiv
    return HttpPolicy(delay=s.delay, timeout=s.timeout, retries=s.retries, max_bytes=int(s.max_pdf_mb * 2**20),
                      user_agent=settings.sources.user_agent, backoff=max(s.delay, 0.05))
