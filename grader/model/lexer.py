"""A CUDA source as its compiler reads it: translation phases 1 to 3, done once for every
reader of a submission's text (the static checks, the CPU backend's scan, nvcc's text
checks, the launch macros), so that what the grader reads of a file is what the
compiler reads.

The compilers are nvcc, which preprocesses with the host's g++ in its GNU dialect, and
g++ -std=gnu++17 on the CPU backend (tests/test_lexer.py asks both). A line ends at \\n,
\\r\\n or \\r. Trigraphs stay as they are, since GNU dialects ignore them: `??=define` is
no directive, and `??/` before a line end no splice. A backslash before a line end (blanks
between allowed) splices the two lines. Comments, string and character literals (with
their prefixes, raw ones too) are read once: a quote left open runs to the end of its
line, a comment or raw string to the end of the file, and a number's digit separators
(1'000) start no character literal. The digraphs `%:%:`, `%:`, `<:`, `:>`, `<%` and `%>`
are `##`, `#`, `[`, `]`, `{` and `}` (`<::` is `<` and `::`). A directive is a logical
line whose first token is `#`; a comment's line ends do not end it.

Each view keeps the text's offsets and lines, so that what is found in it is found at
its line: a comment becomes spaces (its line ends kept), a digraph its primary spelling
and a space, and a token that a splice cuts is written whole where it starts, the
splice's blanks after it."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

# As a compiler reads them, and so in one pass: no token is tried again from every later
# start, however many are left open. The one group, a raw string's delimiter, comes after
# the other literals: Python's re makes each repetition slower for every group before it,
# and a long literal's time superlinear.
_LEXEME = re.compile(
    r"(?<![\w.])\d[\w.]*(?:'[\w.]+)+"  # a number with digit separators
    r"|//[^\n]*|/\*.*?(?:\*/|\Z)"
    r'|"(?:\\.|[^"\\\n])*"?'
    r"|'(?:\\.|[^'\\\n])*'?"
    r'|\b(?:u8|u|U|L)?R"([^()\\\s"]{0,16})\(.*?(?:\)\1"|\Z)'
    r"|%:%:|%:|<%|%>|<:(?!:(?![:>]))|:>",
    re.DOTALL,
)
_PRIMARY = {"%:%:": "##  ", "%:": "# ", "<%": "{ ", "%>": "} ", "<:": "[ ", ":>": "] "}
_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(?P<hash>#)[ \t\f\v]*(?P<name>\w*)(?P<rest>.*)$", re.M)
# Runs of characters that a splice between two of them joins into one token.
_RUNS = (re.compile(r"\w*"), re.compile(r"[-+*/%<>=!&|^~:.#?]*"))


@dataclass(frozen=True)
class Directive:
    """A preprocessing directive: `#define X 1` is ("define", " X 1")."""

    line: int  # the line of its `#`
    name: str  # "" for a `#` alone
    rest: str  # what follows the name to the end of the logical line, comments as spaces


def uncommented(text: str) -> str:
    """`text` with comments as spaces: code, directives and literals as the compiler reads
    them, at the text's offsets and lines."""
    return _read(text).uncommented


def unquoted(text: str) -> str:
    """uncommented(text) with the contents of string and character literals as spaces
    too (their quotes and prefixes kept)."""
    return _read(text).unquoted


def code(text: str) -> str:
    """unquoted(text) with every directive as spaces too: the code alone, so that a
    `__global__` in a comment, a string or a macro's definition is none."""
    return _read(text).code


def directives(text: str) -> list[Directive]:
    """The directives of `text`, in order."""
    return _read(text).directives


def open_comment(text: str) -> int | None:
    """The line on which a /* comment that `text` leaves open starts, or None."""
    return _read(text).open_comment


@lru_cache(maxsize=8)  # each check of one text reads it once
def _read(text: str) -> _Reading:
    return _Reading(text)


class _Reading:
    """The lexemes of one text, read once; each view made when first asked for."""

    def __init__(self, text: str):
        if "\r" in text:  # phase 1: every line end is \n, at the same offsets
            text = text.replace("\r\n", " \n").replace("\r", "\n")
        self.text = text
        self.splices = [(m.start(), m.end() - m.start()) for m in _SPLICE.finditer(text)]
        self.spliced = _SPLICE.sub("", text) if self.splices else text
        self.lexemes = list(_LEXEME.finditer(self.spliced))

    @cached_property
    def uncommented(self) -> str:
        return self._in_text(self._rendered(quotes=False))

    @cached_property
    def unquoted(self) -> str:
        return self._in_text(self._rendered(quotes=True))

    @cached_property
    def code(self) -> str:
        view = self.unquoted
        pieces, last = [], 0
        for match in self._directive_matches:
            start, end = self._offset(match.start()), self._offset(match.end())
            pieces += [view[last:start], _blank(view[start:end])]
            last = end
        pieces.append(view[last:])
        return "".join(pieces)

    @cached_property
    def directives(self) -> list[Directive]:
        out = []
        for match in self._directive_matches:
            line = line_of(self.text, self._offset(match.start("hash")))
            out.append(Directive(line, match["name"], match["rest"]))
        return out

    @cached_property
    def open_comment(self) -> int | None:
        last = self.lexemes[-1] if self.lexemes else None
        if last is None or not last[0].startswith("/*"):
            return None
        if len(last[0]) >= 4 and last[0].endswith("*/"):
            return None
        return line_of(self.text, self._offset(last.start()))

    @cached_property
    def _directive_matches(self) -> list[re.Match]:
        """Each directive, matched in the spliced text with comments and literals
        flattened onto one line each, so that only a line end outside them ends a
        logical line."""
        return list(_DIRECTIVE.finditer(self._rendered(quotes=False, flat=True)))

    def _rendered(self, quotes: bool, flat: bool = False) -> str:
        """The spliced text with comments as spaces and digraphs in their primary
        spelling; with `quotes`, literals' contents as spaces too; `flat`, the line ends
        inside comments and literals as spaces as well."""
        pieces, last = [], 0
        spliced = self.spliced
        for match in self.lexemes:
            token = match[0]
            if token.startswith("/"):
                shown = _blank(token, flat)
            elif token[0] in "%<:":
                shown = _PRIMARY[token]
            elif quotes and (token[0] in "\"'" or match[1] is not None):
                shown = _blank_inside(match, flat)
            elif flat and "\n" in token:
                shown = token.replace("\n", " ")
            else:
                continue  # a number
            pieces += [spliced[last : match.start()], shown]
            last = match.end()
        pieces.append(spliced[last:])
        return "".join(pieces)

    # -- the splices -----------------------------------------------------------------------

    @cached_property
    def _joins(self) -> list[tuple[int, int]]:
        """(offset in the spliced text, length) of each splice, where its blanks go: the
        end of the token it cuts, or where it was; never before the last one's."""
        out: list[tuple[int, int]] = []
        removed, run_end, floor = 0, -1, 0
        starts = [m.start() for m in self.lexemes]
        for at, length in self.splices:
            point = at - removed
            removed += length
            inside = bisect.bisect_right(starts, point) - 1
            if inside >= 0 and self.lexemes[inside].end() > point > starts[inside]:
                point = self.lexemes[inside].end()
            else:
                if point >= run_end:
                    run_end = self._run_end(point)
                point = max(point, run_end)
            floor = max(floor, point)
            out.append((floor, length))
        return out

    def _run_end(self, point: int) -> int:
        """The end of the word or operator whose characters meet at `point`, or -1."""
        text = self.spliced
        if 0 < point < len(text):
            for run in _RUNS:
                if run.fullmatch(text, point - 1, point + 1):
                    return run.match(text, point).end()
        return -1

    @cached_property
    def _shifts(self) -> tuple[list[int], list[int]]:
        """Where the splices' blanks go in the spliced text, and the length of all of them
        up to each."""
        points, total = [], [0]
        for point, length in self._joins:
            points.append(point)
            total.append(total[-1] + length)
        return points, total

    def _offset(self, spliced_at: int) -> int:
        """The offset in the text of the spliced text's `spliced_at`."""
        points, total = self._shifts
        return spliced_at + total[bisect.bisect_right(points, spliced_at)]

    def _in_text(self, spliced: str) -> str:
        """A view of the spliced text at the text's offsets: each splice's blanks put back
        where _joins says."""
        if not self.splices:
            return spliced
        pieces, last = [], 0
        for point, length in self._joins:
            pieces += [spliced[last:point], " " * (length - 1) + "\n"]
            last = point
        pieces.append(spliced[last:])
        return "".join(pieces)


def _blank(token: str, flat: bool = False) -> str:
    """Spaces for each character of `token`, its line ends kept unless `flat`."""
    if flat:
        return " " * len(token)
    return "\n".join(" " * len(line) for line in token.split("\n"))


def _blank_inside(literal: re.Match, flat: bool) -> str:
    """A string or character literal with what is inside its quotes as spaces, its prefix
    and quotes kept."""
    token, delimiter = literal[0], literal[1]
    opened = token.index("'" if token[0] == "'" else '"') + 1
    if delimiter is not None:  # raw: R"delimiter( ... )delimiter"
        ending = f'){delimiter}"'
        closed = token.endswith(ending) and len(token) >= opened - 1 + 2 * len(ending)
    else:  # its last quote closes it where no backslash escapes it
        escapes = len(token) - 1 - len(token[:-1].rstrip("\\"))
        closed = len(token) > 1 and token[-1] == token[0] and escapes % 2 == 0
    end = len(token) - 1 if closed else len(token)
    return token[:opened] + _blank(token[opened:end], flat) + token[end:]


# -- where things are ----------------------------------------------------------------------


def line_of(text: str, offset: int) -> int:
    """The line `offset` is on, in log time, so a scanner that asks for every match's
    line stays linear."""
    return bisect.bisect_left(positions(text, "\n"), offset) + 1


def last_before(text: str, chars: str, offset: int) -> int:
    """The last of `chars` before `offset`, or -1."""
    found = positions(text, chars)
    before = bisect.bisect_left(found, offset)
    return found[before - 1] if before else -1


def next_of(text: str, chars: str, offset: int) -> int:
    """The first of `chars` at or after `offset`, or -1."""
    found = positions(text, chars)
    after = bisect.bisect_left(found, offset)
    return found[after] if after < len(found) else -1


@lru_cache(maxsize=16)  # a str caches its hash: a hit costs no pass over the text
def positions(text: str, chars: str) -> list[int]:
    """Where each of `chars` is in `text`, listed once per text, so that scanners find the
    one before or after any offset in log time instead of searching the text again."""
    return [m.start() for m in re.finditer(f"[{re.escape(chars)}]", text)]
