"""Unit tests of the nearest-key suggestions in sealed refusals."""

from __future__ import annotations

from resolver.answers import nearest_keys


def test_nearest_keys_best_first_and_at_most_three() -> None:
    keys = [
        "v2 GET https://a/search?q=wind",
        "v2 GET https://a/search?q=solar",
        "v2 GET https://a/docs/1",
        "v2 GET https://a/search?q=coal",
    ]
    nearest = nearest_keys(keys, "v2 GET https://a/search?q=solarx")
    assert nearest[0] == "v2 GET https://a/search?q=solar" and len(nearest) == 3
    assert "v2 GET https://a/docs/1" not in nearest
    assert nearest_keys([], "x") == []
