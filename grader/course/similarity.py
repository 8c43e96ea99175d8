"""Similarity across a class: which submissions, or which submission and known public
solution, are the same code under new names. Evidence for a person to read, never a grade.

Each text is read as its compiler reads it (grader.model.lexer: comments out, literals'
contents out) and cut into tokens, normalised so that renaming and layout change nothing:
every identifier the student chose is one symbol, and every number another, while C++
keywords, CUDA's own names (threadIdx, __syncthreads, __shared__, atomicAdd, float4) and those the
lab asks for by name (its kernels, constants and macros) stay as they are. An object-like
macro is replaced where it is used by what it stands for, so `#define TX threadIdx.x`
hides no code; a function-like macro's definition stays in the text, as code.

Texts are compared by fingerprints, as MOSS does (winnowing: Schleimer, Wilkerson and
Aiken, 2003): a hash of every K tokens in a row, of which each window of W hashes keeps its
smallest, so that any run of K + W - 1 tokens two texts share gives them a fingerprint in
common, wherever it sits. What the lab's template holds is no one's own, and is left out
of every text; a fingerprint that more than a share of the class has is boilerplate that
everyone writes, and links no two students (it still links a student to a public
solution, which is evidence of itself). A pair's score is the share of the smaller text's
fingerprints that the other has too: padding a copy with more code does not lower it."""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from grader import defaults
from grader.model import lexer
from grader.model.interface import LAUNCH_MACROS
from grader.model.lab import Lab

K = 12  # tokens a fingerprint covers: about a line of code
W = 8  # hashes per window; any K + W - 1 = 19 tokens in common are found
MIN_SHARED = 4  # fingerprints below which two texts are not compared (a line or two)
PASSAGE_GAP = 2 * (K + W)  # tokens between shared fingerprints that still make one passage
EXPANSION = 64  # tokens a macro may stand for; a longer one stays its name

IDENTIFIER = "V"
NUMBER = "N"

# C++'s keywords (C++20) and size_t
# fmt: off
CXX_KEYWORDS = frozenset((
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "size_t",
))
# CUDA's names a kernel uses as they are; those that start with `__` (__global__,
# __syncthreads, __shfl_down_sync, __ldg) are kept by their prefix
CUDA_NAMES = frozenset((
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "cudaError_t",
    "make_float2", "make_float3", "make_float4", "make_int2", "make_int4", "fmaf", "fmaxf",
    "fminf", "fabsf", "sqrtf", "rsqrtf", "expf", "min", "max",
))
# The preprocessor's directives (if and else are keywords)
DIRECTIVES = frozenset((
    "define", "undef", "include", "ifdef", "ifndef", "elif", "endif", "pragma", "error",
    "line", "defined",
))
# fmt: on
# The alternative spellings of operators, read as the operators
ALTERNATIVES = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
    "and_eq": "&=",
    "or_eq": "|=",
    "xor_eq": "^=",
    "not_eq": "!=",
}  # fmt: skip
_KEPT_FAMILIES = re.compile(
    r"__\w*|atomic[A-Z]\w*|u?(?:char|short|int|long|longlong)[1-4]|(?:float|double)[1-4]"
    r"|u?int(?:8|16|32|64)_t"
)
_TOKEN = re.compile(
    r"(?P<word>[^\W\d]\w*)"
    r"|(?P<number>\.?\d(?:[eEpP][-+]|[\w.'])*)"
    r"|(?P<literal>\"[^\"\n]*\"?|'[^'\n]*'?)"
    r"|->|\+\+|--|<<=?|>>=?|::|&&|\|\||##|[-+*/%&|^!=<>]=|\S"
)


class Token(NamedTuple):  # a tuple: a 256 KiB text has 100k of them
    symbol: str  # normalised: V for a student's name, N for a number
    start: int  # where it is in the text; a macro's tokens are where the macro is used
    end: int


@dataclass(frozen=True)
class Fingerprints:
    """One text's fingerprints: each hash with the token where it first starts."""

    tokens: list[Token]
    own: dict[int, int]  # hash -> token index, less what the template holds


@dataclass(frozen=True)
class Passage:
    """A stretch of code two texts share, by lines of each (first, last)."""

    first: tuple[int, int]
    second: tuple[int, int]


@dataclass(frozen=True)
class Pair:
    """Two texts with code in common: `second` is a public solution when `public`."""

    first: str
    second: str
    shared: int  # fingerprints in common
    of_first: float  # the share of first's own fingerprints that second has too
    of_second: float
    public: bool = False

    @property
    def score(self) -> float:
        """The share of the smaller text that the other has too."""
        return max(self.of_first, self.of_second)


def kept_names(lab: Lab) -> frozenset[str]:
    """The names the grader asks for by name, which every submission spells alike:
    kernels, constants, the grader's macros and the launch macros. Parameters are the
    student's to name, so renaming them must change nothing."""
    names = {kernel.name for kernel in lab.kernels}
    names |= {constant.name for constant in lab.constants}
    return frozenset(names | set(lab.macros) | set(LAUNCH_MACROS))


def _symbol(match: re.Match, kept: frozenset[str]) -> str:
    if match["word"]:
        word = match["word"]
        if word in ALTERNATIVES:
            return ALTERNATIVES[word]
        if word in kept or word in CXX_KEYWORDS or word in CUDA_NAMES or word in DIRECTIVES:
            return word
        return word if _KEPT_FAMILIES.fullmatch(word) else IDENTIFIER
    if match["number"]:
        return NUMBER
    if match["literal"]:
        return match["literal"][0]  # contents are blanked: a string is `"`, a char `'`
    return match[0]


def tokens(text: str, kept: frozenset[str] = frozenset()) -> list[Token]:
    """The text's tokens, normalised, with its object-like macros expanded where used and
    their definitions left out."""
    view, code = lexer.unquoted(text), lexer.code(text)
    starts = {d.line for d in lexer.directives(text)}  # the line of each directive's `#`
    reader = _Reader(kept)
    previous = 0  # where the token before ended
    for match in _TOKEN.finditer(view):
        at = match.start()
        if not code[at].isspace():  # the code view blanks directives only
            reader.code(match)
        elif (
            match[0] == "#"
            and (previous == 0 or "\n" in view[previous:at])  # the first token on its line
            and lexer.line_of(view, at) in starts
        ):
            reader.directive(match)
        else:
            reader.directive_token(match)
        previous = match.end()
    return reader.finish()


class _Reader:
    """Tokens in order: code as it comes, each directive once it ends, and object-like
    macros where they are used."""

    def __init__(self, kept: frozenset[str]):
        self.kept = kept
        self.out: list[Token] = []
        self.macros: dict[str, list[tuple[str, str]]] = {}  # name -> (word, symbol) each
        self.expanded: dict[str, list[str] | None] = {}  # since the last #define or #undef
        self.pending: list[re.Match] = []  # the directive being read

    def code(self, match: re.Match) -> None:
        if self.pending:
            self._end_directive()
        word = match["word"]
        found = self._expansion(word) if word in self.macros else None
        for symbol in found if found is not None else [_symbol(match, self.kept)]:
            self.out.append(Token(symbol, match.start(), match.end()))

    def directive(self, match: re.Match) -> None:
        self._end_directive()
        self.pending.append(match)

    def directive_token(self, match: re.Match) -> None:
        self.pending.append(match)

    def finish(self) -> list[Token]:
        self._end_directive()
        return self.out

    def _end_directive(self) -> None:
        found, self.pending = self.pending, []
        if not self._defines(found):
            self.out += [Token(_symbol(m, self.kept), m.start(), m.end()) for m in found]

    def _defines(self, found: list[re.Match]) -> bool:
        """Take an object-like macro's #define, or an #undef, into the table: True when the
        directive was one, and so is no code. A function-like macro's definition stays in
        the tokens, as code; only its name leaves the table."""
        if len(found) < 3 or found[1]["word"] not in ("define", "undef") or not found[2]["word"]:
            return False
        name = found[2]["word"]
        self.macros.pop(name, None)
        self.expanded.clear()
        if found[1]["word"] == "undef":
            return True
        if len(found) > 3 and found[3][0] == "(" and found[3].start() == found[2].end():
            return False
        self.macros[name] = [(m["word"], _symbol(m, self.kept)) for m in found[3:]]
        return True

    def _expansion(self, name: str) -> list[str] | None:
        """What the macro `name` stands for, its macros expanded in turn; None when that
        is more than EXPANSION tokens, or takes more steps (a macro of empty ones)."""
        if name not in self.expanded:
            self.expanded[name] = _expand(name, self.macros)
        return self.expanded[name]


def _expand(name: str, macros: Mapping[str, list[tuple[str, str]]]) -> list[str] | None:
    out: list[str] = []
    stack = [(name, iter(macros[name]))]
    active = {name}
    steps = 0
    while stack:
        steps += 1
        if steps > EXPANSION:
            return None
        current, body = stack[-1]
        item = next(body, None)
        if item is None:
            stack.pop()
            active.discard(current)
        elif item[0] in macros and item[0] not in active:  # a macro is not expanded in itself
            stack.append((item[0], iter(macros[item[0]])))
            active.add(item[0])
        else:
            out.append(item[1])
    return out


# -- fingerprints ----------------------------------------------------------------------

_MASK = (1 << 64) - 1
_BASE = 1_000_003
_DROP = pow(_BASE, K, 1 << 64)  # the weight of the token that leaves a K-gram


@cache
def _code(symbol: str) -> int:
    return zlib.crc32(symbol.encode("utf-8", "surrogatepass")) + 1


def hashes(symbols: list[str]) -> list[int]:
    """The hash of each K tokens in a row (a rolling hash, the same in every process)."""
    codes = [_code(s) for s in symbols]
    out, value = [], 0
    for i, code in enumerate(codes):
        value = (value * _BASE + code) & _MASK
        if i >= K:
            value = (value - codes[i - K] * _DROP) & _MASK
        if i >= K - 1:
            out.append(value)
    return out


def winnow(values: list[int]) -> dict[int, int]:
    """The smallest hash of each window of W (the rightmost of equal ones), each with
    the first place it was chosen at."""
    chosen: dict[int, int] = {}
    window: deque[int] = deque()  # places of ascending hashes, the window's minimum first
    width = min(W, len(values))
    for i, value in enumerate(values):
        while window and values[window[-1]] >= value:
            window.pop()
        window.append(i)
        if window[0] <= i - width:
            window.popleft()
        if i >= width - 1:
            chosen.setdefault(values[window[0]], window[0])
    return chosen


def fingerprints(text: str, kept: frozenset[str], template: frozenset[int]) -> Fingerprints:
    """The text's fingerprints, less every K-gram the template holds."""
    found = tokens(text, kept)
    chosen = winnow(hashes([t.symbol for t in found]))
    return Fingerprints(found, {h: i for h, i in chosen.items() if h not in template})


def template_grams(text: str, kept: frozenset[str]) -> frozenset[int]:
    """Every K-gram of the lab's template: none of it is a student's own."""
    return frozenset(hashes([t.symbol for t in tokens(text, kept)]))


# -- the class --------------------------------------------------------------------------


def common_limit(submissions: int) -> int:
    """The most submissions a fingerprint may be in and still link two of them."""
    return max(defaults.SIMILAR_COMMON, math.floor(defaults.SIMILAR_COMMON_SHARE * submissions))


class Comparison:
    """The submissions of a class, and the public solutions, each with its fingerprints.
    A fingerprint in more than `common` submissions is boilerplate (common_limit)."""

    def __init__(
        self,
        submissions: Mapping[str, str],
        public: Mapping[str, str],
        kept: frozenset[str],
        template: str,
        common: int,
    ):
        grams = template_grams(template, kept)
        self.texts = {**submissions, **public}
        self.public = frozenset(public)
        self.prints = {name: fingerprints(t, kept, grams) for name, t in self.texts.items()}
        self.holders: dict[int, list[str]] = {}
        for name in sorted(self.prints):
            for value in self.prints[name].own:
                self.holders.setdefault(value, []).append(name)
        self.most = common

    def pairs(self, threshold: float) -> list[Pair]:
        """Every pair whose score is at least `threshold`, the highest first."""
        shared: Counter[tuple[str, str]] = Counter()
        for names in self.holders.values():
            shared.update(self._linked(names))
        found = [self._pair(a, b, n) for (a, b), n in shared.items() if n >= MIN_SHARED]
        found = [p for p in found if p.score >= threshold]
        return sorted(found, key=lambda p: (-p.score, -p.shared, p.first, p.second))

    def _linked(self, names: list[str]) -> Iterator[tuple[str, str]]:
        """The pairs one fingerprint links: two students unless it is boilerplate, and a
        student and a public solution always."""
        students = [n for n in names if n not in self.public]
        if len(students) <= self.most:
            yield from ((a, b) for i, a in enumerate(students) for b in students[i + 1 :])
        yield from ((s, p) for p in names if p in self.public for s in students)

    def _pair(self, first: str, second: str, shared: int) -> Pair:
        sizes = [len(self.prints[name].own) for name in (first, second)]
        return Pair(
            first, second, shared, shared / sizes[0], shared / sizes[1], second in self.public
        )

    def passages(self, pair: Pair) -> list[Passage]:
        """The stretches of code the pair shares, in the first text's order."""
        a, b = self.prints[pair.first], self.prints[pair.second]
        places = sorted(
            (i, b.own[h])
            for h, i in a.own.items()
            if h in b.own and (pair.public or self._between_students(h))
        )
        runs: list[list[tuple[int, int]]] = []
        for here in places:
            last = runs[-1][-1] if runs else None
            if last and here[0] - last[0] <= PASSAGE_GAP and 0 <= here[1] - last[1] <= PASSAGE_GAP:
                runs[-1].append(here)
            else:
                runs.append([here])
        return [self._passage(pair, run) for run in runs]

    def _between_students(self, value: int) -> bool:
        return sum(n not in self.public for n in self.holders[value]) <= self.most

    def _passage(self, pair: Pair, run: list[tuple[int, int]]) -> Passage:
        sides = []
        for name, places in ((pair.first, [p[0] for p in run]), (pair.second, [p[1] for p in run])):
            found, text = self.prints[name].tokens, self.texts[name]
            start, end = found[min(places)].start, found[max(places) + K - 1].end
            sides.append((lexer.line_of(text, start), lexer.line_of(text, end - 1)))
        return Passage(sides[0], sides[1])
