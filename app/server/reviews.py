"""Asking the API server for a TokenReview or SubjectAccessReview, with a cache of the answers.

Both are a POST of a review object whose ``status`` holds the answer, and both are cached for a
short time by outcome (kube's delegating authenticator and authorizer: 10s each by default), so the
hot path (kube-scheduler calling /filter for every pod) rarely leaves the process. The blocking
HTTP call runs in a worker thread; the cache is looked up on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

import orjson
from starlette.concurrency import run_in_threadpool

from app.kube.client import KubeClient, KubeError
from app.server.ttlcache import TTLCache

__all__ = ["CachedReviewer", "ReviewError", "post_review"]

R = TypeVar("R")

REVIEW_TIMEOUT = 10.0
"""Seconds one review may take (kube's webhook client timeout)."""


class ReviewError(Exception):
    """The API server could not be asked, or did not answer the review."""


def post_review(client: KubeClient, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """POST ``body`` to ``path`` and return the answer's ``status`` (an empty mapping if absent)."""
    try:
        code, data = client.request("POST", path, body=body, timeout=REVIEW_TIMEOUT)
    except KubeError as err:
        raise ReviewError(err.message) from err
    if code not in (200, 201):
        raise ReviewError(str(KubeError.from_response(code, data)))
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise ReviewError(f"undecodable answer from {path}: {err}") from err
    status = answer.get("status") if isinstance(answer, dict) else None
    return status if isinstance(status, dict) else {}


class CachedReviewer(Generic[R]):
    """Reviews of one kind, cached by a key the caller derives from what is reviewed.

    ``decode`` turns a review status into the result; ``ttl`` says how long a result is kept.
    Failures to ask (:class:`ReviewError`) are not cached.
    """

    def __init__(
        self,
        client: KubeClient,
        path: str,
        decode: Callable[[Mapping[str, Any]], R],
        ttl: Callable[[R], float],
    ) -> None:
        self.client = client
        self.path = path
        self._decode = decode
        self._ttl = ttl
        self.cache: TTLCache[Hashable, R] = TTLCache()

    async def review(self, key: Hashable, body: Callable[[], Mapping[str, Any]]) -> R:
        """The cached result for ``key``, or the API server's answer to ``body()``."""
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        status = await run_in_threadpool(post_review, self.client, self.path, body())
        result = self._decode(status)
        self.cache.put(key, result, self._ttl(result))
        return result
