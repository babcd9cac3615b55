"""Authentication of a request, as kube-scheduler's delegating authenticator does it.

In order, the first that applies decides:

1. **request header** (``--requestheader-*``, kube's front-proxy authentication): a client
   certificate issued by a ``--requestheader-client-ca-file`` authority (and, when
   ``--requestheader-allowed-names`` is set, with one of those Common Names) vouches for the user
   named in ``--requestheader-username-headers`` (groups, UID and extra from their headers); without
   a username header the request goes on to the next step;
2. **client certificate**: verified by the TLS layer against ``--client-ca-file``; the user is its
   Common Name, the groups its Organizations (a certificate without a CN is refused);
3. **bearer token** (``Authorization: Bearer ...``): checked by a TokenReview against the API server
   and cached for ``--authentication-token-webhook-cache-ttl``; a token the API server rejects, or
   any token when berth has no TokenReview access, is refused;
4. **anonymous**: a request with neither is ``system:anonymous`` (group ``system:unauthenticated``)
   when anonymous access is on, and always on the anonymous paths (the always-allowed probes, as
   kube's structured ``anonymous.conditions``); otherwise it is refused.

Every authenticated user also gets the group ``system:authenticated``. A refusal is an HTTP 401.

The TLS layer verifies client certificates against both CA bundles at once (Python's ``ssl`` has
one trust store per context); which bundle vouches for a certificate is decided by its issuer's
name, which must be the subject of a CA of that bundle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from starlette.types import Scope

from app.kube.client import KubeClient
from app.server.paths import PathSet
from app.server.protocol import Subject, client_issuer, client_subject
from app.server.reviews import CachedReviewer

__all__ = [
    "ANONYMOUS_USER",
    "AUTHENTICATED_GROUP",
    "AuthenticationError",
    "Authenticator",
    "RequestHeaderAuthenticator",
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


@dataclass(frozen=True, slots=True)
class RequestHeaderAuthenticator:
    """kube's ``headerrequest`` authenticator behind its x509 verifier (``--requestheader-*``).

    ``issuers`` are the subjects of the ``--requestheader-client-ca-file`` authorities; header names
    are matched case-insensitively, as HTTP header names are.
    """

    issuers: frozenset[Subject]
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("x-remote-user",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("x-remote-group",)
    extra_prefixes: tuple[str, ...] = ("x-remote-extra-",)

    def vouches(self, scope: Scope) -> bool:
        """Whether the request's client certificate comes from a request-header authority."""
        issuer = client_issuer(scope)
        return issuer is not None and issuer in self.issuers

    def authenticate(self, scope: Scope, subject: Subject) -> UserInfo | None:
        """The user the headers name (None without a username header); the certificate's CN must be
        allowed. The identity headers are removed from the request, as kube's filter does."""
        if self.allowed_names:
            names = [value for name, value in subject if name == "commonName"]
            cn = names[0] if names else ""
            if cn not in self.allowed_names:
                raise AuthenticationError(f"x509: subject with cn={cn} is not in the allowed list")
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        values: dict[str, list[str]] = {}
        for raw_name, raw_value in headers:
            values.setdefault(raw_name.decode("latin-1").lower(), []).append(raw_value.decode("latin-1"))
        user = _first(values, self.username_headers)
        if not user:
            return None
        uid = _first(values, self.uid_headers)
        groups = tuple(v for h in self.group_headers for v in values.get(h.lower(), ()))
        extra: dict[str, list[str]] = {}
        prefixes = tuple(p.lower() for p in self.extra_prefixes)
        for name, vs in values.items():
            for prefix in prefixes:
                if name.startswith(prefix):
                    extra.setdefault(unquote(name[len(prefix) :]).lower(), []).extend(vs)
        identity = {h.lower() for h in (*self.username_headers, *self.uid_headers, *self.group_headers)}
        scope["headers"] = [
            (n, v)
            for n, v in headers
            if (name := n.decode("latin-1").lower()) not in identity and not name.startswith(prefixes)
        ]
        return UserInfo(
            user,
            uid=uid,
            groups=_with_authenticated(groups),
            extra=tuple(sorted((k, tuple(v)) for k, v in extra.items())),
        )


def _first(values: Mapping[str, list[str]], names: tuple[str, ...]) -> str:
    for name in names:
        for value in values.get(name.lower(), ()):
            if value:
                return value
    return ""


class Authenticator:
    """Request header, client certificate, bearer token, anonymous (see the module docstring)."""

    def __init__(
        self,
        *,
        tokens: TokenReviewAuthenticator | None,
        anonymous: bool,
        anonymous_paths: PathSet,
        request_header: RequestHeaderAuthenticator | None = None,
        client_ca_issuers: frozenset[Subject] | None = None,
    ) -> None:
        self.tokens = tokens
        self.anonymous = anonymous
        self.anonymous_paths = anonymous_paths
        self.request_header = request_header
        # With a request-header CA in the trust store too, a certificate only counts as a client
        # certificate when one of the --client-ca-file authorities issued it.
        self.client_ca_issuers = client_ca_issuers if request_header is not None else None

    async def authenticate(self, scope: Scope) -> UserInfo:
        """The request's user; :class:`AuthenticationError` (401) when it has none acceptable."""
        subject = client_subject(scope)
        if subject is not None:
            failure: AuthenticationError | None = None
            if self.request_header is not None and self.request_header.vouches(scope):
                try:
                    user = self.request_header.authenticate(scope, subject)
                except AuthenticationError as err:
                    failure = err
                else:
                    if user is not None:
                        return user
            issuers = self.client_ca_issuers
            if issuers is None or client_issuer(scope) in issuers:
                return user_from_subject(subject)
            if failure is not None and bearer_token(scope) is None:
                raise failure
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
