"""Text fitted to a terminal's width: each long line broken at spaces, its continuation
indented under the line's own text (a hanging indent), as `fmt` and rustc do. Colour
escapes take no width, and a word longer than the line is cut where it must be."""

from __future__ import annotations

import re
import unicodedata

_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# a line's own indent and the mark its text starts with: a list's "- ", a log's "| "
_LEAD = re.compile(r"( *)((?:- |\| )?)")
HANGING = 2  # columns a continuation is indented past the line's text


def visible(text: str) -> int:
    """The columns `text` takes on a terminal: escapes take none, a wide character (CJK,
    in a student's comment) two."""
    return sum(_columns(c) for c in _ESCAPE.sub("", text))


def _columns(char: str) -> int:
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def wrap(text: str, width: int | None) -> str:
    """`text` with every line at most `width` columns; None leaves it as it is."""
    if not width:
        return text
    return "\n".join(part for line in text.split("\n") for part in wrap_line(line, width))


def wrap_line(line: str, width: int) -> list[str]:
    if visible(line) <= width:
        return [line]
    lead = _LEAD.match(_ESCAPE.sub("", line))
    indent, mark = lead.group(1), lead.group(2)
    # a list item's continuation starts under its text; a log's keeps its bar, so the
    # excerpt reads as one block; any other line's is indented past the line's own
    hanging = indent + {"- ": "  ", "| ": "|   "}.get(mark, " " * HANGING)
    if len(hanging) > width // 2:  # a deep indent would leave no room for words
        hanging = ""
    lines: list[str] = []
    current = ""
    # runs of spaces (a table's) come back as empty words, and are kept
    for index, word in enumerate(line.split(" ")):
        started = _ESCAPE.sub("", current).strip() not in ("", "-", "|")
        if index == 0:
            current = word
        elif started and visible(current) + 1 + visible(word) > width:
            lines.append(current)
            current = hanging + word
        else:
            current += " " + word
        while visible(current) > width:  # a word longer than the line: cut it
            head, rest = _cut(current, width)
            lines.append(head)
            current = hanging + rest
    lines.append(current)
    return [part.rstrip() for part in lines]


def _cut(text: str, width: int) -> tuple[str, str]:
    """`text` cut after `width` visible columns, escapes kept whole on their side."""
    seen, index = 0, 0
    while index < len(text) and seen < width:
        escape = _ESCAPE.match(text, index)
        if escape:
            index = escape.end()
            continue
        if seen + _columns(text[index]) > width and seen:
            break
        seen, index = seen + _columns(text[index]), index + 1
    return text[:index], text[index:]
