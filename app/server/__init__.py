"""berth's HTTP server: the extender verbs plus the endpoints a Kubernetes component serves.

Public API: :func:`create_app` (:mod:`app.server.app`).
"""

from app.server.app import DEFAULT_MAX_REQUEST_BYTES, create_app

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "create_app"]
