"""Text fitted to a terminal's width (grader/report/wrap.py): no line wider than the
terminal, continuations under the text they continue, colour taking no room."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.report.wrap import visible, wrap

NOTE = (
    "  - 13 hidden cases, worth 4 points, were not run here: the course staff run them "
    "when they grade."
)


def test_a_list_item_continues_under_its_text():
    assert wrap(NOTE, 60) == (
        "  - 13 hidden cases, worth 4 points, were not run here: the\n"
        "    course staff run them when they grade."
    )


def test_a_line_continues_two_columns_past_its_indent():
    line = (
        "    hint: Every element is missing the products for k >= 96: loop ceil(Width / TILE) "
        "times."
    )
    assert wrap(line, 50) == (
        "    hint: Every element is missing the products\n"
        "      for k >= 96: loop ceil(Width / TILE) times."
    )


def test_a_compiler_log_keeps_its_bar_and_a_long_word_is_cut():
    line = "  | k.cu(3): error: " + "x" * 50
    assert wrap(line, 30).splitlines() == [
        "  | k.cu(3): error:",
        "  |   " + "x" * 24,
        "  |   " + "x" * 24,
        "  |   xx",
    ]


def test_colour_takes_no_room():
    painted = "\x1b[1mScore\x1b[0m \x1b[32;1m3/3\x1b[0m on the public cases"
    assert wrap(painted, 29) == painted  # 29 columns on the screen
    assert [visible(line) for line in wrap(painted, 20).splitlines()] == [16, 14]


@pytest.mark.parametrize("width", [12, 40, 80])
def test_no_line_is_wider_than_asked_and_no_word_is_lost(width):
    text = "\n".join([NOTE, "", "  case   visibility  sizes", "x" * 100])
    wrapped = wrap(text, width)
    assert max(visible(line) for line in wrapped.splitlines()) <= width
    assert "".join(wrapped.split()) == "".join(text.split())


def test_none_leaves_the_text_as_it_is():
    assert wrap(NOTE, None) == NOTE


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")) | st.just("\n")),
       st.integers(min_value=2, max_value=120))  # fmt: skip
def test_any_text_fits_any_width_and_keeps_its_words(text, width):
    """Any width a wide character fits in (two columns and more)."""
    wrapped = wrap(text, width)
    assert all(visible(line) <= width for line in wrapped.split("\n"))
    assert "".join(wrapped.split()) == "".join(text.split())


def test_a_wide_character_takes_two_columns():
    assert wrap("  | // 块大小 块大小 块大小", 14).splitlines() == [
        "  | // 块大小",
        "  |   块大小",
        "  |   块大小",
    ]
