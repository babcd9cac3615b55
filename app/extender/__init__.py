"""berth's face as a kube-scheduler extender: the v1 wire format and the filter/prioritize verbs.

Public API: :func:`decode_args`, :func:`encode_filter_result`, :func:`encode_host_priorities`,
:func:`encode_error`, :class:`ExtenderArgs`, :class:`FilterResult`, :class:`HostPriority`,
:class:`NodeCache`, :class:`WireError` (:mod:`app.extender.wire`), and :class:`ExtenderService`, :func:`extender_scores`,
:class:`NoProfileError` (:mod:`app.extender.service`). The HTTP server lives in :mod:`app.server`.
"""

from app.extender.service import (
    MAX_EXTENDER_PRIORITY,
    UNKNOWN_NODE_REASON,
    ExtenderService,
    NoProfileError,
    extender_scores,
)
from app.extender.wire import (
    ExtenderArgs,
    FilterResult,
    HostPriority,
    NodeCache,
    WireError,
    decode_args,
    encode_error,
    encode_filter_result,
    encode_host_priorities,
)

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "UNKNOWN_NODE_REASON",
    "ExtenderArgs",
    "ExtenderService",
    "FilterResult",
    "HostPriority",
    "NoProfileError",
    "NodeCache",
    "WireError",
    "decode_args",
    "encode_error",
    "encode_filter_result",
    "encode_host_priorities",
    "extender_scores",
]
