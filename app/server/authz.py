"""Authorization of a non-resource request, as kube-scheduler's delegating authorizer does it.

A union, in order; the first that allows (or, for the SubjectAccessReview, explicitly denies) decides:

1. the privileged groups (``system:masters``) may do anything;
2. ``--authorization-always-allow-paths`` (default ``/healthz``, ``/readyz``, ``/livez``) are open to all;
3. berth's ``--authorization-static-rules`` (:mod:`app.server.rules`);
4. a SubjectAccessReview of the path and the lower-case HTTP verb (``post`` for POST /filter),
   cached ``--authorization-webhook-cache-authorized-ttl`` / ``-unauthorized-ttl``.

Not allowed means HTTP 403. A SubjectAccessReview that cannot be made (API server down) is an
error (HTTP 500), as in kube, unless an earlier step allowed the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.kube.client import KubeClient
from app.server.authn import UserInfo
from app.server.paths import PathSet
from app.server.reviews import CachedReviewer
from app.server.rules import StaticRules

__all__ = ["PRIVILEGED_GROUPS", "Authorizer", "SubjectAccessReviewer", "Verdict"]

SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
PRIVILEGED_GROUPS = ("system:masters",)


@dataclass(frozen=True, slots=True)
class Verdict:
    """An authorization decision; ``reason`` is the authorizer's explanation (often empty)."""

    allowed: bool
    denied: bool = False
    reason: str = ""


def _decode_sar(status: Mapping[str, Any]) -> Verdict:
    reason = str(status.get("reason") or "")
    if status.get("evaluationError"):
        reason = f"{reason} ({status['evaluationError']})" if reason else str(status["evaluationError"])
    return Verdict(bool(status.get("allowed")), bool(status.get("denied")), reason)


class SubjectAccessReviewer:
    """SubjectAccessReviews of non-resource URLs, cached by (user, verb, path)."""

    def __init__(self, client: KubeClient, allowed_ttl: float, denied_ttl: float) -> None:
        self.reviewer: CachedReviewer[Verdict] = CachedReviewer(
            client, SAR_PATH, _decode_sar, lambda v: allowed_ttl if v.allowed else denied_ttl
        )

    async def review(self, user: UserInfo, verb: str, path: str) -> Verdict:
        """The API server's answer (or the cached one).

        Raises :class:`~app.server.reviews.ReviewError` when the API server cannot be asked.
        """

        def body() -> dict[str, Any]:
            spec: dict[str, Any] = {
                "nonResourceAttributes": {"path": path, "verb": verb},
                "user": user.name,
                "groups": list(user.groups),
            }
            if user.uid:
                spec["uid"] = user.uid
            if user.extra:
                spec["extra"] = {k: list(v) for k, v in user.extra}
            return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}

        return await self.reviewer.review((user, verb, path), body)


_ALLOW = Verdict(True)


class Authorizer:
    """The union described in the module docstring."""

    def __init__(
        self,
        *,
        always_allow: PathSet,
        rules: StaticRules | None = None,
        sar: SubjectAccessReviewer | None = None,
        privileged_groups: Sequence[str] = PRIVILEGED_GROUPS,
    ) -> None:
        self.always_allow = always_allow
        self.rules = rules
        self.sar = sar
        self.privileged_groups = frozenset(privileged_groups)

    async def authorize(self, user: UserInfo, verb: str, path: str) -> Verdict:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``."""
        if not self.privileged_groups.isdisjoint(user.groups):
            return _ALLOW
        if self.always_allow.matches(path):
            return _ALLOW
        if self.rules is not None and self.rules.allows(user, verb, path):
            return _ALLOW
        if self.sar is None:
            return Verdict(False)
        return await self.sar.review(user, verb, path)
