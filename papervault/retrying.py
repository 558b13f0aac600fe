"""Retries with exponential backoff that honour a server's `Retry-After`, for every caller that retries
(`sources/web.py` over HTTP, `agents/base.py` around a model backend), on tenacity.

An attempt that may succeed later raises `RetryLater` (with `after`, the seconds the server asked for, when it
said); anything else ends the attempts at once. Between attempts the wait is `backoff * 2**(n-1)` after the
n-th, or the server's `Retry-After` (at most `MAX_RETRY_AFTER`) when it gave one.
"""

from __future__ import annotations

import email.utils
import time

from tenacity import AsyncRetrying, Retrying, retry_if_exception_type, stop_after_attempt

MAX_RETRY_AFTER = 120.0      # seconds: a server asking for longer gets the attempt after this wait


class RetryLater(Exception):
    """One attempt failed in a way worth another: `reason` says how, `after` is the server's Retry-After."""

    def __init__(self, reason: str, after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.after = after


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date); None when absent or
    unreadable."""
    value = (value or "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _wait(backoff: float):
    def wait(state) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        after = getattr(exc, "after", None)
        if after is not None:
            return min(max(after, 0.0), MAX_RETRY_AFTER)
        return backoff * 2 ** (state.attempt_number - 1)
    return wait


def _options(attempts: int, backoff: float) -> dict:
    return {"stop": stop_after_attempt(max(1, attempts)), "wait": _wait(backoff),
            "retry": retry_if_exception_type(RetryLater), "reraise": True}


def retrying(attempts: int, backoff: float) -> Retrying:
    """`for attempt in retrying(n, b): with attempt: ...`: up to `attempts` tries while one raises RetryLater;
    the last RetryLater (or any other error at once) propagates."""
    return Retrying(**_options(attempts, backoff))


def async_retrying(attempts: int, backoff: float) -> AsyncRetrying:
    """`retrying` for coroutines (`async for attempt in ...`), waiting with asyncio.sleep."""
    return AsyncRetrying(**_options(attempts, backoff))
