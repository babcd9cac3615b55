"""``DefaultNormalizeScore`` (``plugins/helper/normalize_score.go``)."""

from __future__ import annotations

from app.framework.status import Status


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> Status | None:
    """Scale ``scores`` in place from [0, max(scores)] to [0, ``max_priority``].

    With ``reverse`` each result is subtracted from ``max_priority``. When every score is 0 the list is
    left alone, or set to ``max_priority`` throughout when reversed. Scores are assumed non-negative,
    as in kube-scheduler. Always returns None (success).
    """
    max_count = 0
    for s in scores:
        if s > max_count:
            max_count = s
    if max_count == 0:
        if reverse:
            for i in range(len(scores)):
                scores[i] = max_priority
        return None
    for i, s in enumerate(scores):
        product = max_priority * s
        # Go's int64 division truncates toward zero; // floors, which differs only for negatives.
        score = product // max_count if product >= 0 else -(-product // max_count)
        scores[i] = max_priority - score if reverse else score
    return None
