"""``DefaultNormalizeScore`` (``plugins/helper/normalize_score.go``)."""

from __future__ import annotations

from app.framework.status import Status


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> Status | None:
    """Scale ``scores`` in place from [0, max(scores)] to [0, ``max_priority``].

    With ``reverse`` each result is subtracted from ``max_priority``. When every score is 0 the list is
    left alone, or set to ``max_priority`` throughout when reversed. Scores are assumed non-negative,
    as in kube-scheduler. Always returns None (success).
    """
    max_count = max(scores, default=0)
    if max_count <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return None
    if min(scores) >= 0:
        # The common case, in one comprehension (this runs for every pod over every scored node).
        if reverse:
            scores[:] = [max_priority - max_priority * s // max_count for s in scores]
        else:
            scores[:] = [max_priority * s // max_count for s in scores]
        return None
    for i, s in enumerate(scores):
        product = max_priority * s
        # Go's int64 division truncates toward zero; // floors, which differs only for negatives.
        score = product // max_count if product >= 0 else -(-product // max_count)
        scores[i] = max_priority - score if reverse else score
    return None
