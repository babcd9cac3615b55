"""default_normalize_score, ported from plugins/helper/normalize_score_test.go."""

from __future__ import annotations

import pytest

from app.plugins.helper.normalize_score import default_normalize_score


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
        (False, [0, 0, 0, 0], [0, 0, 0, 0]),
        (True, [0, 0, 0, 0], [100, 100, 100, 100]),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    got = list(scores)
    assert default_normalize_score(100, reverse, got) is None
    assert got == expected


def test_empty_list_is_fine() -> None:
    scores: list[int] = []
    assert default_normalize_score(100, True, scores) is None
    assert scores == []


def test_other_max_priority_truncates() -> None:
    scores = [1, 2, 3]
    default_normalize_score(10, False, scores)
    assert scores == [3, 6, 10]
