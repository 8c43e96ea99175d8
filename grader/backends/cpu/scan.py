"""Reading a CUDA source as text: its kernels and file-scope variables, the CUDA features
the CPU backend cannot run, the two rewrites of `__shared__` declarations (dynamic shared
memory, and static arrays placed against guard pages), and the registration footer that
describes each kernel and variable to the runner.

Everything works on the code as the compiler reads it, with comments, string contents and
directives blanked out (grader.model.lexer.code: offsets and line numbers kept), so a
`__global__` inside a comment or a macro definition is not mistaken for a kernel."""

from __future__ import annotations

import bisect
import collections
import functools
import re
from dataclasses import dataclass

from grader.model import lexer
from grader.model.lexer import last_before, line_of, next_of

REGISTRATION_FILE = "<grader registration>"


@dataclass(frozen=True)
class KernelDecl:
    name: str
    line: int
    bounds: str | None  # the __launch_bounds__ max-threads expression, as written
    template: bool


@dataclass(frozen=True)
class VariableDecl:
    name: str  # plain name
    qualified: str  # with its namespaces, as the footer must write it
    space: str  # "const" for __constant__, "global" for __device__
    line: int


@dataclass(frozen=True)
class Unsupported:
    line: int
    sentence: str
    refused: bool = False  # text aimed at the grader, not a feature the CPU lacks


# -- brackets ---------------------------------------------------------------------------


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _balanced(text: str, open_at: int) -> int:
    """Index just past the bracket that closes the one at `open_at` (brackets of other
    kinds do not count), or the end of the text."""
    return _closers(text, text[open_at]).get(open_at, len(text))


@functools.lru_cache(maxsize=8)
def _closers(text: str, opening: str) -> dict[int, int]:
    """Every `opening` bracket's closing index, plus one, in one pass."""
    closing = _PAIRS[opening]
    out, stack = {}, []
    for match in re.finditer(re.escape(opening) + "|" + re.escape(closing), text):
        if match[0] == opening:
            stack.append(match.start())
        elif stack:
            out[stack.pop()] = match.end()
    return out


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# -- scopes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """What a brace opens, and everything around it: each scope points to the one it is
    in, so entering one costs the same at any depth."""

    names: _Scope | None  # the innermost named namespace around this one
    name: str
    at_file: bool  # no function or class body around it
    depth: int = 0  # named namespaces

    def namespaces(self) -> tuple[str, ...]:
        out, scope = [], self if self.name else self.names
        while scope is not None:
            out.append(scope.name)
            scope = scope.names
        return tuple(reversed(out))


_FILE = _Scope(None, "", True)


def _scope_at(code: str) -> list[tuple[int, _Scope]]:
    """Checkpoints (offset, scope) at every brace."""
    points: list[tuple[int, _Scope]] = [(0, _FILE)]
    stack: list[_Scope] = [_FILE]
    openers = _scope_openers(code)
    for match in re.finditer(r"[{}]", code):
        if match.group(0) == "{":
            outer = stack[-1]
            named = outer if outer.name else outer.names
            name = openers.get(match.start())
            if name:
                depth = (named.depth if named else 0) + 1
                stack.append(_Scope(named, name, outer.at_file, depth))
            elif name is not None:
                stack.append(_Scope(named, "", outer.at_file))
            else:
                stack.append(_Scope(named, "", False))
        elif len(stack) > 1:
            stack.pop()
        points.append((match.end(), stack[-1]))
    return points


@functools.lru_cache(maxsize=4)
def _scope_openers(code: str) -> dict[int, str]:
    """The braces that open a namespace (its name, "" for an unnamed one) or an
    `extern "C"` block (""), read in one pass; every other brace opens a block."""
    found = re.finditer(r'\b(?:namespace\s*([A-Za-z_]\w*)?|extern\s*"\s*")\s*\{', code)
    return {m.end() - 1: m[1] or "" for m in found}


def _context(points: list[tuple[int, _Scope]], offset: int) -> _Scope:
    """The scope at `offset`: that of the last checkpoint at or before it."""
    return points[bisect.bisect_right(points, offset, key=lambda p: p[0]) - 1][1]


# -- kernels --------------------------------------------------------------------------

_SKIP_CALLS = {"__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__"}
_TOKEN = re.compile(r"\s*([A-Za-z_]\w*|\S)")
_CALL = re.compile(r"\s*\(")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _statement_start(code: str, offset: int) -> int:
    """Just past the last `;`, `{` or `}` before `offset`."""
    return last_before(code, ";{}", offset) + 1


def kernels(text: str) -> list[KernelDecl]:
    """Every `__global__` function the file declares, in order, each name once."""
    code = lexer.code(text)
    out: dict[str, KernelDecl] = {}
    pos = 0
    for match in re.finditer(r"\b__global__\b", code):
        if match.start() < pos:
            continue  # read as part of the declaration before it, which ends alike
        # no declaration starts inside the one before it
        start = max(_statement_start(code, match.start()), pos)
        pos = match.end()
        name = None
        while pos < len(code):
            token = _TOKEN.match(code, pos)
            if not token:
                break
            word = token.group(1)
            pos = token.end()
            if word in (";", "{"):
                break
            after = _CALL.match(code, pos)
            if _IDENTIFIER.fullmatch(word) and after:
                if word in _SKIP_CALLS:
                    pos = _balanced(code, after.end() - 1)
                    continue
                name = word
                break
        if not name or name in out:
            continue
        head = code[start:pos]
        bounds = None
        lb = re.search(r"__launch_bounds__\s*\(", head)
        if lb:
            # The expression is written again in the footer, where its macros expand
            # as they did here.
            open_at = start + lb.end() - 1
            inner = lexer.uncommented(text)[open_at + 1 : _balanced(code, open_at) - 1]
            bounds = " ".join(_split_top(inner)[0].split()) or None
        template = re.search(r"\btemplate\s*<", head) is not None
        out[name] = KernelDecl(name, line_of(code, match.start()), bounds, template)
    return list(out.values())


# -- host functions ---------------------------------------------------------------------

# A function head's end: its parameters, then qualifiers a definition may carry
_HEAD_END = re.compile(r"\)\s*(?:(?:const|volatile|noexcept|override|final|&&?)\s*)*\Z")
_DEVICE_WORD = re.compile(r"\b(?:__global__|__device__)\b")
HOST_CALL_DEPTH = 4  # rounds of blanking: a host helper of a helper of a launcher is left out


def without_host_functions(text: str) -> str:
    """`text` with each function no backend runs as spaces, its lines kept: defined at
    file or namespace scope with neither `__global__` nor `__device__` in its head, and
    named nowhere else in the file (a launcher kept from the course's complete programs,
    with its `<<<` and cudaMalloc). A GPU grading compiles such a function and never
    calls it, so the CPU backend neither compiles nor refuses it. One named elsewhere,
    a macro's definition included (the macro may make it `__device__`), is kept for the
    compilers to judge. A helper only such functions name goes too, a few calls deep."""
    for _ in range(HOST_CALL_DEPTH):
        spans = list(_host_functions(lexer.code(text), lexer.unquoted(text)))
        if not spans:
            break
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], re.sub(r"[^\n]", " ", text[start:end])]
            last = end
        text = "".join(pieces) + text[last:]
    return text


def _host_functions(code: str, unquoted: str):
    """(start, end) of each definition without_host_functions blanks, in order."""
    points, openers = _scope_at(code), _scope_openers(code)
    names = collections.Counter(m[0] for m in _IDENTIFIER.finditer(unquoted))
    last = 0
    for brace in re.finditer(r"\{", code):
        at = brace.start()
        if at < last or at in openers or not _context(points, at).at_file:
            continue
        start = _statement_start(code, at)
        head = code[start:at]
        if not _HEAD_END.search(head) or _DEVICE_WORD.search(head):
            continue
        name = _declared_name(code, start, at)
        if name is not None and names[name] == 1:
            last = _balanced(code, at)
            yield start, last


def _declared_name(code: str, start: int, end: int) -> str | None:
    """The name a declaration between `start` and `end` gives to a function: the first
    identifier followed by `(` that is not an attribute's."""
    pos = start
    while pos < end:
        token = _TOKEN.match(code, pos, end)
        if not token:
            return None
        word, pos = token.group(1), token.end()
        after = _CALL.match(code, pos, end)
        if _IDENTIFIER.fullmatch(word) and after:
            if word not in _SKIP_CALLS:
                return word
            pos = _balanced(code, after.end() - 1)
    return None


# -- file-scope variables ---------------------------------------------------------------

_DECL_WORDS = {
    "__constant__",
    "__device__",
    "__managed__",
    "static",
    "const",
    "volatile",
    "extern",
    "inline",
    "unsigned",
    "signed",
    "struct",
    "class",
    "__restrict__",
    "constexpr",
}


def _declarator_name(part: str) -> str | None:
    part = re.split(r"=|\{", part, maxsplit=1)[0]
    part = re.sub(r"\[[^\]]*\]", " ", part)
    part = re.sub(
        r"__align__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)|alignas\s*\([^)]*\)", " ", part
    )
    words = re.findall(r"[A-Za-z_]\w*", part)
    words = [w for w in words if w not in _DECL_WORDS]
    return words[-1] if words else None


MAX_NAMESPACES = 64  # nested namespaces around a variable the footer names; deeper is left out
_NESTING = re.compile(r"[()\[\]{};]")


def _declaration_end(code: str, pos: int) -> int:
    """The `;` that ends the declaration going on at `pos`, outside any brackets."""
    depth = 0
    for match in _NESTING.finditer(code, pos):
        if match[0] in "([{":
            depth += 1
        elif match[0] in ")]}":
            depth -= 1
        elif depth == 0:
            return match.start()
    return len(code)


def variables(text: str) -> list[VariableDecl]:
    """File-scope `__constant__` and `__device__` variables (static ones too). Functions,
    `extern` declarations and `__shared__` arrays are left out."""
    code = lexer.code(text)
    points = _scope_at(code)
    seen_statements: set[int] = set()
    out: dict[str, VariableDecl] = {}
    read_to = 0  # the end of the last statement read: a word inside it is part of it
    for match in re.finditer(r"\b(__constant__|__device__|__managed__)\b", code):
        scope = _context(points, match.start())
        if match.start() < read_to or not scope.at_file or scope.depth > MAX_NAMESPACES:
            continue
        start = _statement_start(code, match.start())
        if start in seen_statements:
            continue
        seen_statements.add(start)
        stop = next_of(code, "(=;{", match.end())
        if stop < 0 or code[stop] in "({":
            continue  # a function (or a function body follows)
        end = read_to = _declaration_end(code, match.end())
        statement = code[start:end]
        if re.search(r"\b(extern|typedef|__shared__|template|using)\b", statement):
            continue
        space = "const" if "__constant__" in statement else "global"
        head = statement.split("=", 1)[0]
        body = statement[len(head) :]
        for part in _split_top(head + body):
            name = _declarator_name(part)
            if name and name not in out:
                qualified = "::".join((*scope.namespaces(), name))
                out[name] = VariableDecl(name, qualified, space, line_of(code, match.start()))
    return list(out.values())


# -- what cannot run on the CPU ---------------------------------------------------------

_ASM = r"\b(asm|__asm__|__asm)\b\s*(volatile\s*|__volatile__\s*)?\("
_UNSUPPORTED = (
    (_ASM, "inline PTX assembly"),
    (
        r"<<<",
        "a kernel launch (<<<...>>>): the grader launches your kernels itself, a kernel "
        "launching kernels (dynamic parallelism) is refused on every backend, and host code "
        "is not run",
    ),
    (
        r"\btexture\s*<|\btex[123]D\w*\s*[<(]|\btex1Dfetch\b|\bcudaTextureObject_t\b",
        "textures",
    ),
    (r"\bsurf[123]D\w*\s*[<(]|\bcudaSurfaceObject_t\b", "surfaces"),
    (r"\bcooperative_groups\b|\bthis_grid\s*\(", "cooperative groups"),
    (r"\bwmma\s*::", "tensor-core matrix operations"),
    (
        r"\bcuda[A-Z]\w*\s*\(",
        "calls to the CUDA runtime API (a submission holds only kernels and device functions; "
        "the grader allocates memory and launches the kernel itself)",
    ),
)

_HEADER = re.compile(r'\s*[<"]([\w/]+?)(?:\.h)?[>"]')
_UNSUPPORTED_HEADERS = {
    "cooperative_groups": "cooperative groups",
    "mma": "tensor-core matrix operations",
    "cuda_pipeline": "asynchronous copies",
    "curand_kernel": "cuRAND device functions",
}


def unsupported(text: str) -> list[Unsupported]:
    """Each CUDA feature the CPU backend cannot run, once, at its first line."""
    code = lexer.code(text)
    found: list[Unsupported] = []
    for pattern, what in _UNSUPPORTED:
        match = re.search(pattern, code)
        if match and pattern == _ASM:  # a comment's asm is refused; any other is PTX
            found += _comment_asm(text, code)
            ptx = (m for m in re.finditer(pattern, code) if not _only_comments(text, m))
            match = next(ptx, None)
        elif match:  # a function the file defines is its own, whatever its name
            own = _defined_functions(code) | _defined_macros(text)
            calls = (m for m in re.finditer(pattern, code) if _called(m) not in own)
            match = next(calls, None)
        if match:
            word = match.group(0).strip().rstrip("(").strip()
            found.append(_sentence(what, word, line_of(code, match.start())))
    for directive in lexer.directives(text):
        header = _HEADER.match(directive.rest) if directive.name == "include" else None
        what = _UNSUPPORTED_HEADERS.get(header.group(1).split("/")[0]) if header else None
        if what:
            found.append(_sentence(what, f"#include <{header.group(1)}.h>", directive.line))
    return sorted(found, key=lambda u: u.line)


def _called(match: re.Match[str]) -> str | None:
    """The name a match of `name(` calls; None for a match of anything else."""
    said = match.group(0)
    return said.rstrip("(").strip() if said.endswith("(") else None


@functools.lru_cache(maxsize=8)
def _defined_functions(code: str) -> frozenset[str]:
    """The names the file defines as functions, as `__device__ float cudaMulAdd(float a) {`
    does: parameters followed by a body. One pass, however many names the file holds."""
    own = set()
    for use in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", code):
        after = _balanced(code, use.end() - 1)
        if code[after : after + 200].lstrip().startswith("{"):
            own.add(use.group(1))
    return frozenset(own)


def _defined_macros(text: str) -> set[str]:
    """The function-like macros the file defines (`#define cudaCheck(call) ...`)."""
    defines = (d.rest for d in lexer.directives(text) if d.name == "define")
    return {m.group(1) for rest in defines if (m := re.match(r"\s*([A-Za-z_]\w*)\(", rest))}


# How a kernel reads a word that another thread or block sets while it waits (a flag it
# spins on): through `volatile` (but an asm statement's), or between fences, which make
# even a plain load read memory anew on each turn
_WAITS = re.compile(rf"{_ASM}|\bvolatile\b|\b__threadfence(?:_block|_system)?\s*\(")


def needs_load_hooks(text: str) -> bool:
    """Whether the text declares something volatile or calls a __threadfence, a macro's
    definition included: its module needs load hooks in every case (build.py), for a
    thread that spins on a flag to let the others run (runtime/scheduler.h)."""
    found = _WAITS.finditer(lexer.unquoted(text))
    return any(not m.group(0).startswith(("asm", "__asm")) for m in found)


# a template's literals, adjacent, up to its operands or its end
_TEMPLATE = re.compile(r'\s*+((?:"[^"\n]*+"\s*+)++)[:)]')
_PTX_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def _only_comments(text: str, match: re.Match[str]) -> bool:
    """Whether the asm statement at `match` (in lexer.code(text), where a literal's
    contents are spaces in their places) has a template of PTX comments alone: no
    instruction, only words for a reader of the text. Anything else (a macro, an escape
    other than a line end or tab, an operand's text) counts as instructions."""
    template = _TEMPLATE.match(match.string, match.end())
    if template is None or len(text) != len(match.string):
        return False
    start, end = template.span(1)
    literals = re.findall(r'"([^"\n]*)"', text[start:end])
    said = "".join(literals).replace("\\n", "\n").replace("\\t", "\t")
    if "\\" in said:
        return False
    return bool(_PTX_COMMENT.search(said)) and not _PTX_COMMENT.sub(" ", said).strip()


def _comment_asm(text: str, code: str) -> list[Unsupported]:
    """An asm statement whose template is a comment, once, at its first line: a GPU runs
    nothing of it, and a rule that read the text once would have taken the instruction
    the comment names. Refused on both backends, so that nvcc's build of it is not graded
    where the CPU backend's cannot be."""
    match = next((m for m in re.finditer(_ASM, code) if _only_comments(text, m)), None)
    if match is None:
        return []
    line = line_of(code, match.start())
    sentence = (
        f"Line {line} holds an asm statement whose text is only a comment: no instruction "
        "of it runs on a GPU. The grader measures what the kernel executes, never what its "
        "text names, and refuses a file that names instructions it does not run. Remove "
        "the statement."
    )
    return [Unsupported(line, sentence, refused=True)]


def _sentence(what: str, word: str, line: int) -> Unsupported:
    return Unsupported(
        line,
        f"Line {line} uses {what} (`{word}`), which the CPU backend cannot run. Remove it, "
        "or grade on a GPU with --backend cuda.",
    )


# -- the rewrite: extern __shared__ --------------------------------------------------------

# Bounded, so that each `extern` is read a few hundred characters on at most, however many
# there are: a real declaration is far shorter.
_EXTERN_SHARED = re.compile(
    r"\bextern\b(?P<pre>[^;{}()]{0,200}?(?:\([^;{}()]{0,200}\)[^;{}()]{0,200}?){0,4})"
    r"\b__shared__\b(?=[^;{}\[]{0,400}+\[)(?P<post>[^;{}\[]{0,400}?)"
    r"\b(?P<name>[A-Za-z_]\w*+)\s*+\[\s*+\]\s*+;"
)
_ATTRIBUTES = re.compile(r"__align__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)|alignas\s*\([^)]*\)")


def rewrite_dynamic_shared(text: str) -> str:
    """`extern __shared__ T name[];` becomes a pointer to the block's dynamic shared memory:
    a local `T* const name` inside a function, a macro at file scope. Line numbers of
    everything else stay as they were."""
    code = lexer.code(text)
    points = _scope_at(code)
    pieces: list[str] = []
    last = 0
    for match in _EXTERN_SHARED.finditer(code):
        type_text = " ".join((match["pre"] + " " + match["post"]).split())
        cast = " ".join(_ATTRIBUTES.sub(" ", type_text).split()) or "char"
        name = match["name"]
        newlines = code.count("\n", match.start(), match.end())
        if _context(points, match.start()).at_file:
            end_line = line_of(code, match.end())
            replacement = (
                f"\n#define {name} (reinterpret_cast<{cast} *>(grader_rt_dynamic_shared()))\n"
                f"#line {end_line}\n"
            )
        else:
            replacement = (
                f"{type_text} *const {name} = ::grader::dynamic_shared<{cast} *>();"
                + "\n" * newlines
            )
        pieces.append(text[last : match.start()])
        pieces.append(replacement)
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


# -- where a barrier sits -----------------------------------------------------------------

# a block's barriers, and the warp's: __syncwarp and every *_sync operation (__shfl_sync,
# __ballot_sync, __reduce_add_sync...), which waits for the lanes its mask names
_BARRIER = re.compile(r"\b(__syncthreads(?:_count|_and|_or)?|__syncwarp|__\w+_sync)\s*\(")
_BRANCH = re.compile(r"\b(if|else|switch|case|default)\b")


@dataclass(frozen=True)
class BarrierContext:
    branch_line: int | None  # the if (else, switch) the barrier is inside
    return_line: int | None  # a return before the barrier in the same function
    branch: str = "if"  # which of them


def barrier_context(text: str, line: int) -> BarrierContext:
    """What surrounds the barrier (or warp operation) on `line`: an enclosing branch, an
    earlier return."""
    code = lexer.code(text)
    starts = [0, *(m.end() for m in re.finditer("\n", code))]
    if not 1 <= line <= len(starts):
        return BarrierContext(None, None)
    end_of_line = starts[line] if line < len(starts) else len(code)
    call = _BARRIER.search(code, starts[line - 1], end_of_line)
    if not call:
        return BarrierContext(None, None)
    opens = _open_braces(code, call.start())
    branch = _branch_around(code, call.start(), opens)
    body = opens[0] if opens else 0
    returns = list(re.finditer(r"\breturn\b", code[body : call.start()]))
    return_line = line_of(code, body + returns[-1].start()) if returns else None
    if branch is None:
        return BarrierContext(None, return_line)
    word = _BRANCH.match(code, branch).group(1)
    return BarrierContext(line_of(code, branch), return_line, word)


def _open_braces(code: str, pos: int) -> list[int]:
    """Offsets of the braces still open at `pos`, outermost (the function body) first;
    namespaces and extern "C" blocks left out."""
    stack: list[int] = []
    for match in re.finditer(r"[{}]", code[:pos]):
        if match.group(0) == "{":
            stack.append(match.start())
        elif stack:
            stack.pop()
    # what opens a brace is just before it, as _scope_at reads it
    openers = _scope_openers(code)
    return [b for b in stack if b not in openers]


def _branch_around(code: str, pos: int, opens: list[int]) -> int | None:
    """The offset of the innermost if/else/switch whose body holds `pos`: the statement's
    own header (`if (c) __syncthreads();`), or the header before an enclosing brace.
    Loops are looked through."""
    for end in [pos, *reversed(opens[1:])]:
        start = _statement_start(code, end)
        found = _header_branch(code[start:end])
        if found:
            return start + found.start()
    return None


def _header_branch(header: str) -> re.Match | None:
    """The last if/else/switch keyword of a statement's header."""
    found = list(_BRANCH.finditer(header))
    return found[-1] if found else None


# -- the rewrite: static __shared__ ----------------------------------------------------------

_SHARED = re.compile(r"\b__shared__\b")
_SPACES = re.compile(r"\s*")
_DECLARATOR = re.compile(
    r"^(?P<stars>[\s*&]*)(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$"
)
MAX_SHARED_SLOTS = 256


@dataclass(frozen=True)
class SharedDecl:
    name: str
    line: int
    slot: int


def _shared_declarators(statement: str) -> tuple[str, list[tuple[str, str, str]]] | None:
    """(base type, [(stars, name, dims)]) of `__shared__ float a[N][M], *p;`, or None
    for anything else (an initializer, a function, `extern`)."""
    text = _ATTRIBUTES.sub(" ", _SHARED.sub(" ", statement))
    text = re.sub(r"\bstatic\b", " ", text)
    outside = re.sub(r"\[[^\]]*\]", "[]", text)
    if re.search(r"\b(extern|typedef|template|using|operator)\b|[=(){};]", outside):
        return None
    parts = _split_top(text)
    first = re.match(
        r"^(?P<base>.*?)(?P<rest>[\s*&]*\b[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*)$", parts[0], re.S
    )
    if not first or not re.search(r"[A-Za-z_]", first["base"]):
        return None
    declarators = []
    for part in [first["rest"], *parts[1:]]:
        match = _DECLARATOR.match(part.strip())
        if not match:
            return None
        declarators.append((match["stars"].replace(" ", ""), match["name"], match["dims"].strip()))
    return " ".join(first["base"].split()), declarators


def rewrite_static_shared(text: str) -> tuple[str, list[SharedDecl]]:
    """Every `__shared__ T name[...]` declaration becomes a reference to a slot the runner
    places against guard pages (grader_cuda.h, static_shared): a local reference inside a
    function, a macro at file scope. What this cannot read stays `thread_local`. Line
    numbers of everything else stay as they were."""
    code = lexer.code(text)
    points = _scope_at(code)
    pieces: list[str] = []
    found: list[SharedDecl] = []
    last = read = 0
    for match in _SHARED.finditer(code):
        start = _SPACES.match(code, _statement_start(code, match.start())).end()
        if start < max(last, read):
            continue  # a statement read already
        read = match.end()
        end = next_of(code, ";{}", match.end())
        if end < 0 or code[end] != ";":
            continue  # not a declaration this can read: it stays thread_local
        parsed = _shared_declarators(code[start:end])
        if parsed is None or len(found) + len(parsed[1]) > MAX_SHARED_SLOTS:
            continue
        base, declarators = parsed
        at_file = _context(points, start).at_file
        statements, macros = [], []
        for stars, name, dims in declarators:
            slot = len(found)
            named = re.compile(rf"\b{name}\b").search(code, start, end)
            line = line_of(code, named.start() if named else start)
            found.append(SharedDecl(name, line, slot))
            kind = f"grader_shared_t_{name}"
            decl = f"grader_shared_{name}"
            statements.append(
                f"typedef {base} {stars}{kind}{dims}; "
                f"static const grader_shared_decl {decl} __attribute__((used)) = "
                f'::grader::shared_decl<{kind}>({slot}, {line}, "{name}");'
            )
            access = f"::grader::static_shared<{kind}>(&{decl})"
            if at_file:
                macros.append(f"#define {name} ({access})")
            else:
                statements.append(f"{kind}& {name} = {access};")
        replacement = " ".join(statements)
        newlines = code.count("\n", start, end + 1)
        if at_file:
            replacement += "\n" + "\n".join(macros) + f"\n#line {line_of(code, end)}\n"
        else:
            replacement += "\n" * newlines
        pieces.append(text[last:start])
        pieces.append(replacement)
        last = end + 1
    pieces.append(text[last:])
    return "".join(pieces), found


# -- the registration footer ---------------------------------------------------------------


def registration(entries: list[str]) -> str:
    """C++ appended after everything else, one entry per line: line N of
    REGISTRATION_FILE is entries[N - 1], so an entry the compiler rejects can be dropped."""
    # its macros are defined here, after the submission, which sees none of them
    lines = ["", "#include <grader_register.h>", f'#line 1 "{REGISTRATION_FILE}"', *entries]
    lines.append("__GRADER_TLS_ANCHOR")
    return "\n".join(lines) + "\n"


def registration_entries(
    kernel_decls: list[KernelDecl], variable_decls: list[VariableDecl], shared_slots: int = 0
) -> list[str]:
    entries = [f"__GRADER_SHARED_SLOTS({shared_slots})"] if shared_slots else []
    for k in kernel_decls:
        if not k.template:
            entries.append(f"__GRADER_KERNEL({k.name}, ({k.bounds or 0}))")
    for v in variable_decls:
        space = 1 if v.space == "const" else 2
        entries.append(f"__GRADER_VARIABLE({v.name}, {v.qualified}, {space})")
    return entries
