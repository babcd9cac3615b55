"""Authentication of a request, as kube-scheduler's delegating authenticator does it.

In order, the first that applies decides:

1. **client certificate**: verified by the TLS layer against ``--client-ca-file``; the user is its
   Common Name, the groups its Organizations (a certificate without a CN is refused);
2. **bearer token** (``Authorization: Bearer ...``): checked by a TokenReview against the API server
   and cached for ``--authentication-token-webhook-cache-ttl``; a token the API server rejects, or
   any token when berth has no TokenReview access, is refused;
3. **anonymous**: a request with neither is ``system:anonymous`` (group ``system:unauthenticated``)
   when anonymous access is on, and always on the anonymous paths (the always-allowed probes, as
   kube's structured ``anonymous.conditions``); otherwise it is refused.

Every authenticated user also gets the group ``system:authenticated``. A refusal is an HTTP 401.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Scope

from app.kube.client import KubeClient
from app.server.paths import PathSet
from app.server.protocol import Subject, client_subject
from app.server.reviews import CachedReviewer

__all__ = [
    "ANONYMOUS_USER",
    "AUTHENTICATED_GROUP",
    "AuthenticationError",
    "Authenticator",
    "TokenReviewAuthenticator",
    "UserInfo",
    "bearer_token",
]

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who made a request (``user.Info``); hashable, so it can key the authorization cache."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS_USER = UserInfo("system:anonymous", groups=("system:unauthenticated",))


class AuthenticationError(Exception):
    """The request's credentials were refused (HTTP 401); the message says why, for the log.

    ``presented`` is False when the request had no credentials at all.
    """

    def __init__(self, message: str, *, presented: bool = True) -> None:
        super().__init__(message)
        self.presented = presented


def _with_authenticated(groups: tuple[str, ...]) -> tuple[str, ...]:
    return groups if AUTHENTICATED_GROUP in groups else (*groups, AUTHENTICATED_GROUP)


def user_from_subject(subject: Subject) -> UserInfo:
    """x509's CommonNameUserConversion: user = CN, groups = O."""
    names = [value for name, value in subject if name == "commonName"]
    if not names or not names[0]:
        raise AuthenticationError("client certificate has no common name")
    orgs = tuple(value for name, value in subject if name == "organizationName")
    return UserInfo(names[0], groups=_with_authenticated(orgs))


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (bearertoken's parsing), else None."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            parts = value.decode("latin-1").strip().split(" ", 2)
            if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
                return parts[1]
            return None
    return None


@dataclass(frozen=True, slots=True)
class _TokenResult:
    user: UserInfo | None
    error: str


def _decode_token_review(status: Mapping[str, Any]) -> _TokenResult:
    if not status.get("authenticated"):
        return _TokenResult(None, str(status.get("error") or "invalid bearer token"))
    user = status.get("user") or {}
    extra = user.get("extra") or {}
    return _TokenResult(
        UserInfo(
            name=str(user.get("username", "")),
            uid=str(user.get("uid", "")),
            groups=_with_authenticated(tuple(str(g) for g in user.get("groups") or ())),
            extra=tuple(sorted((str(k), tuple(str(v) for v in vs or ())) for k, vs in extra.items())),
        ),
        "",
    )


class TokenReviewAuthenticator:
    """Bearer tokens checked by TokenReview; answers (either way) cached for ``ttl`` seconds."""

    def __init__(self, client: KubeClient, ttl: float) -> None:
        self.reviewer: CachedReviewer[_TokenResult] = CachedReviewer(
            client, TOKEN_REVIEW_PATH, _decode_token_review, lambda _: ttl
        )

    async def authenticate(self, token: str) -> UserInfo:
        """The token's user; :class:`AuthenticationError` if the API server rejects it.

        Raises :class:`~app.server.reviews.ReviewError` when the API server cannot be asked.
        """

        def body() -> dict[str, Any]:
            return {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            }

        # Keyed by a digest: the cache never holds the tokens themselves.
        result = await self.reviewer.review(hashlib.sha256(token.encode()).digest(), body)
        if result.user is None:
            raise AuthenticationError(result.error)
        return result.user


class Authenticator:
    """Client certificate, then bearer token, then anonymous (see the module docstring)."""

    def __init__(
        self,
        *,
        tokens: TokenReviewAuthenticator | None,
        anonymous: bool,
        anonymous_paths: PathSet,
    ) -> None:
        self.tokens = tokens
        self.anonymous = anonymous
        self.anonymous_paths = anonymous_paths

    async def authenticate(self, scope: Scope) -> UserInfo:
        """The request's user; :class:`AuthenticationError` (401) when it has none acceptable."""
        subject = client_subject(scope)
        if subject is not None:
            return user_from_subject(subject)
        token = bearer_token(scope)
        if token is not None:
            if self.tokens is None:
                raise AuthenticationError("bearer token presented, but berth has no TokenReview access")
            return await self.tokens.authenticate(token)
        if self.anonymous or self.anonymous_paths.matches(scope["path"]):
            return ANONYMOUS_USER
        raise AuthenticationError(
            "no client certificate or bearer token, and anonymous access is off", presented=False
        )
