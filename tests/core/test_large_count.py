"""Large counts in words: English in thousands (Django's intword), Chinese in 万 (10⁴) and
亿 (10⁸), the units Chinese counts in."""

import pytest
from django.utils import translation

from apps.core.templatetags.units import large_count


@pytest.mark.parametrize(
    ("value", "english", "chinese"),
    [
        (2 * 10**11, "200.0 billion", "2,000 亿"),  # 2·10¹¹ = 2,000 × 10⁸
        (150_000_000, "150.0 million", "1.5 亿"),  # 1.5 × 10⁸
        (10**10, "10.0 billion", "100 亿"),
        (30_000, "30,000", "3 万"),  # 3 × 10⁴
        (1234, "1,234", "1,234"),
        (None, "—", "—"),
    ],
)
def test_large_counts_read_the_way_each_language_counts(value, english, chinese):
    with translation.override("en"):
        assert large_count(value) == english
    with translation.override("zh-hans"):
        assert large_count(value) == chinese
