"""The launch macros a submission sets, the defaults the grader filled in, sizes in the
submission's own code that disagree with them, and sizes it fixes where the lab varies
them (a `#define MASK_RADIUS 2` that passes the public cases' MASK_WIDTH 5 alone).

A kernel written for 32 x 32 tiles that never defines BLOCK_X and BLOCK_Y runs with the
grader's default 16 x 16 blocks; its wrong outputs alone do not say so. This reads the
file's own `#define`s, evaluates the simple ones, and compares the sizes its blocks step
by (`blockIdx.y * TILE_WIDTH`) and its shared tiles with the launch. The advice names
only the lab's own axes, only the axes whose sizes disagree, and a halo only where the lab
has a mask."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

from grader.ast_lock import HELD as AST_LOCK
from grader.model import lexer
from grader.model.interface import LAUNCH_MACROS
from grader.model.lab import Lab
from grader.model.lexer import line_of
from grader.model.result import LaunchMacros

_OBJECT_LIKE = re.compile(r"[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)")  # a #define's rest
_STEP = re.compile(
    r"\bblockIdx\s*\.\s*([xyz])\s*\*\s*(\(?\s*[A-Za-z_]\w*\s*\)?|\d+)"
    r"|(\b[A-Za-z_]\w*|\b\d+)\s*\*\s*blockIdx\s*\.\s*([xyz])"
)
# A second factor after `2 * blockIdx.x`: `* BLOCK_X`, `* blockDim.x` (2 * BLOCK_X in all)
_MORE = re.compile(r"\s*\*\s*(blockDim\s*\.\s*[xyz]|\(?\s*[A-Za-z_]\w*\s*\)?|\d+)")
# Bounded, so that each __shared__ is read a few hundred characters on at most, however
# many there are: a real declaration is far shorter.
_SHARED = re.compile(
    r"\b__shared__\b[^;{}()]{0,200}?\b([A-Za-z_]\w*+)\s*+((?:\[[^\]\[]{1,200}\]\s*+){2,8});"
)
_TILE_LIKE = re.compile(r"TILE|BLOCK", re.IGNORECASE)
_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


def describe(
    text: str, launch: Mapping[str, int], macros: Mapping[str, int], lab: Lab
) -> LaunchMacros:
    """What `text` sets of the launch, as compiled with the grader's `macros`, and a
    sentence for each size in it that the launch `launch` (BLOCK_X .. TILE_Z) does not
    match, with advice in `lab`'s terms, or that is fixed where `lab`'s cases vary a
    macro."""
    code = lexer.uncommented(text)
    defines = _defines(text)
    defined = [m for m in LAUNCH_MACROS if m in defines]
    known = _Values(defines, {**macros, **launch})
    terms = _Terms("XYZ"[: lab.dims], bool(lab.constants), defined)
    steps = _steps(code, known, launch, terms)
    # a step that disagrees already says the launch is not the file's: once is enough
    tiles = [] if steps else _tiles(code, defines, known, launch, terms)
    fixed = _fixed(defines, varied(lab), macros)
    warnings = [*steps, *tiles, *fixed]
    return LaunchMacros(values=dict(launch), defined=defined, warnings=warnings)


def varied(lab: Lab) -> dict[str, tuple[int, ...]]:
    """The macros the grader sets that the lab's cases vary, each with its values in the
    public cases (the hidden ones are not named: a student sees these sentences)."""
    public = [lab.macro_values(lab.full_sizes(c.sizes)) for c in lab.public_cases]
    hidden = [lab.macro_values(lab.full_sizes(c.sizes)) for c in lab.hidden_cases]
    out = {}
    for name in lab.macros:
        shown = sorted({values[name] for values in public})
        if len({values[name] for values in (*public, *hidden)}) > 1:
            out[name] = tuple(shown)
    return out


def _fixed(
    defines: Mapping[str, str], varied: Mapping[str, tuple[int, ...]], macros: Mapping[str, int]
) -> list[str]:
    """A sentence for each macro of the file that keeps one value whatever a varied macro
    is, and that is that macro's size at its public value: named after it (MASK_RADIUS
    for MASK_WIDTH), or its width or radius (`#define RADIUS 2` at MASK_WIDTH 5), or a
    block that holds a tile and its halo (`#define BLOCK_X 20` for TILE_X 16)."""
    out = []
    for macro, public in varied.items():
        width = public[0]
        # one evaluator for each value, each macro worked out once: linear in the file
        at = [_Values(defines, {**macros, macro: v}) for v in (*public, width + 2)]
        for name in defines:
            values = {known.name(name) for known in at}
            if len(values) != 1 or None in values or name in varied:
                continue
            value = values.pop()
            derived = _derived(name, value, macro, width, at[0], defines[name])
            if derived:
                out.append(
                    f"{name} is {value} in your file whatever {macro} is: right for the "
                    f"public cases' {macro} {_listed(public)}, wrong where the hidden cases "
                    f"set {macro} to other values. Derive it from {macro}: "
                    f"#define {name} {derived}."
                )
    return out


def _derived(
    name: str, value: int, macro: str, width: int, known: _Values, body: str
) -> str | None:
    """The expression `name` stands for at `macro` = `width` (as `known` evaluates), where
    its name, or its value written as a number, says it is a size of that macro; None
    where nothing says so (a coarsening factor TILE_X / BLOCK_X of 2 is no radius)."""
    if name in LAUNCH_MACROS:
        tile = known.name(f"TILE_{name[-1]}")
        fits = name.startswith("BLOCK_") and tile is not None and value == tile + width - 1
        return f"(TILE_{name[-1]} + {macro} - 1)" if fits else None
    by_value = {width // 2: f"({macro} / 2)", width: macro, width * width: f"({macro} * {macro})"}
    if name.split("_")[0] == macro.split("_")[0]:  # MASK_RADIUS, MASK_SIZE for MASK_WIDTH
        return by_value.get(value, f"(an expression of {macro})")
    written = not re.search(r"[A-Za-z_]", re.sub(r"\b\d+[uUlL]*\b", "", body))
    if not written or _TILE_LIKE.search(name) or value not in (width // 2, width):
        return None
    return by_value[value]


def _listed(values: tuple[int, ...]) -> str:
    return " and ".join(str(v) for v in values)


@dataclass(frozen=True)
class _Terms:
    """What advice may name: the lab's axes, whether it has a halo (a mask), and the
    launch macros the file defines already."""

    axes: str
    halo: bool
    defined: list[str]


def _defines(text: str) -> dict[str, str]:
    """The body of each object-like macro `text` defines, by name (the last definition)."""
    out = {}
    for directive in lexer.directives(text):
        macro = _OBJECT_LIKE.match(directive.rest) if directive.name == "define" else None
        if macro:
            out[macro[1]] = macro[2].strip()
    return out


class _Values:
    """Values of simple macros: integer arithmetic over numbers and other macros, each
    macro worked out once (a macro naming another twice, again and again, would double
    the work at every level), each value within 64 bits."""

    def __init__(self, defines: Mapping[str, str], fixed: Mapping[str, int]):
        self.defines = defines
        self.fixed = dict(fixed)
        self.worked_out: dict[str, int | None] = {}

    def of(self, expression: str, depth: int = 0) -> int | None:
        if depth > 16:
            return None
        text = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expression.strip())

        def name(match: re.Match) -> str:
            value = self.name(match.group(0), depth + 1)
            return "None" if value is None else f"({value})"

        text = re.sub(r"\b[A-Za-z_]\w*\b", name, text)
        try:
            with AST_LOCK:
                tree = ast.parse(text, mode="eval")
            return _evaluate(tree.body)
        except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError):
            return None

    def name(self, name: str, depth: int = 0) -> int | None:
        if name in self.fixed:
            return self.fixed[name]
        if name not in self.worked_out:
            body = self.defines.get(name)
            self.worked_out[name] = self.of(body, depth) if body else None
        return self.worked_out[name]


def _evaluate(node: ast.AST) -> int:
    return _within_64_bits(_value(node))


def _within_64_bits(value: int) -> int:
    if not -(1 << 63) <= value < 1 << 64:
        raise ValueError("not a size")
    return value


def _value(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div | ast.FloorDiv):
            return int(left / right) if right else _raise()
        if isinstance(node.op, ast.Mod):
            return int(left - right * int(left / right)) if right else _raise()
        if isinstance(node.op, ast.LShift | ast.RShift) and not 0 <= right < 64:
            raise ValueError("not a shift of a size")
        if type(node.op) in _OPS:
            return _OPS[type(node.op)](left, right)
    raise ValueError("not a constant expression")


def _raise() -> int:
    raise ZeroDivisionError


def _steps(code: str, known: _Values, launch: Mapping[str, int], terms: _Terms) -> list[str]:
    """`blockIdx.y * TILE_WIDTH` where TILE_WIDTH is neither TILE_Y nor BLOCK_Y: one
    warning for each value (TILE_H and TILE_W both 32), at its first line, naming every
    axis stepped by it."""
    found: dict[int, _Step] = {}
    for match in _STEP.finditer(code):
        axis = (match.group(1) or match.group(4)).upper()
        factor = (match.group(2) or match.group(3)).strip("() \t")
        value = known.of(factor)
        shown, threads = factor, False  # threads: a number of blocks' threads
        more = _MORE.match(code, match.end()) if match.group(3) else None
        if more is not None and value is not None:
            second = more.group(1).strip("() \t")
            block = launch[f"BLOCK_{axis}"]
            times = block if second.startswith("blockDim") else known.of(second)
            value = value * times if times is not None else None
            shown, threads = f"{factor} * {' '.join(second.split())}", times == block
        if value is None or value in (launch[f"TILE_{axis}"], launch[f"BLOCK_{axis}"]):
            continue
        if factor in LAUNCH_MACROS:
            continue
        step = found.setdefault(value, _Step(line_of(code, match.start()), axis, shown, threads))
        if axis not in step.axes:
            step.axes += axis
    return [_step_warning(value, step, launch, terms) for value, step in found.items()]


@dataclass
class _Step:
    """The first step by one value: its line, the axes stepped by it, the step as written
    (TILE_WIDTH, 32, 2 * blockDim.x), and whether it is a number of a block's threads
    times some count, each thread covering several elements."""

    line: int
    axes: str
    shown: str
    threads: bool


def _step_warning(value: int, step: _Step, launch: Mapping[str, int], terms: _Terms) -> str:
    axis = step.axes[0]
    shown = f"the number {value}" if step.shown.isdigit() else f"{step.shown} = {value}"
    named = step.shown if re.fullmatch(r"[A-Za-z_]\w*", step.shown) else None
    return (
        f"Line {step.line} steps blockIdx.{axis.lower()} by {shown}, but the grader's blocks "
        f"each cover TILE_{axis} = {launch[f'TILE_{axis}']} elements along {axis.lower()} "
        f"(BLOCK_{axis} = {launch[f'BLOCK_{axis}']} threads){_defaults(terms.defined)}. "
        + _advice(named, value, _own(step.axes, terms), terms, step.threads)
    )


def _own(axes: str, terms: _Terms) -> list[str]:
    """`axes` that are the lab's (all of them, where the code steps only others)."""
    return sorted([a for a in axes if a in terms.axes] or axes, key="XYZ".index)


def _tiles(
    code: str,
    defines: Mapping[str, str],
    known: _Values,
    launch: Mapping[str, int],
    terms: _Terms,
) -> list[str]:
    """Tile-size macros bigger than anything the launch covers, or else __shared__ tiles
    that are: only when the file sets none of the launch macros (the launch is all
    defaults), one warning for each value."""
    if terms.defined:
        return []
    largest = max(launch.values())
    out: dict[int, str] = {}
    for name in defines:
        value = known.name(name)
        tile_like = _TILE_LIKE.search(name) and name not in LAUNCH_MACROS
        if tile_like and value and value > largest and value not in out:
            out[value] = (
                f"{name} is {value} in your file, but it defines none of the launch macros, so "
                f"the grader launches its default {_shape(launch, 'BLOCK')} blocks, each "
                f"covering a {_shape(launch, 'TILE')} tile. "
                + _advice(name, value, list(terms.axes), terms, False)
            )
    return list(out.values()) or _shared_tiles(code, known, launch)


def _shared_tiles(code: str, known: _Values, launch: Mapping[str, int]) -> list[str]:
    largest = max(launch.values())
    out = []
    for match in _SHARED.finditer(code):
        dims = [known.of(d) for d in re.findall(r"\[([^\]]+)\]", match.group(2))]
        if all(d is not None and d > largest for d in dims[-2:]):
            sizes = " x ".join(str(d) for d in dims)
            out.append(
                f"__shared__ {match.group(1)} (line {line_of(code, match.start())}) is "
                f"{sizes}, but the grader launches its default {_shape(launch, 'BLOCK')} "
                f"blocks over {_shape(launch, 'TILE')} tiles: your file defines none of the "
                "launch macros (BLOCK_X, BLOCK_Y, TILE_X, TILE_Y ...)."
            )
    return out


def _shape(launch: Mapping[str, int], kind: str) -> str:
    axes = [launch[f"{kind}_{a}"] for a in "XYZ"]
    if axes[2] == 1:
        axes = axes[:2]
    return " x ".join(str(a) for a in axes)


def _defaults(defined: list[str]) -> str:
    unset = [m for m in LAUNCH_MACROS if m not in defined]
    return f" (your file does not define {', '.join(unset)}: the defaults)" if unset else ""


def _advice(name: str | None, value: int, axes: list[str], terms: _Terms, threads: bool) -> str:
    """How to say that each block covers `value` elements along `axes`, in place of the
    BLOCK macros the file defines otherwise; a step by a number of threads (2 *
    blockDim.x) is a tile of several elements per thread."""
    size = name or str(value)
    tiles = [f"TILE_{a}" for a in axes]
    along = f"along {_both([a.lower() for a in axes])}"
    if threads:
        return (
            f"If each block covers {value} elements {along}, say so: "
            f"{_both([f'#define {t} {size}' for t in tiles])}, with BLOCK_{axes[0]} the "
            "threads that cover them."
        )
    blocks = _both([f"#define BLOCK_{a} {size}" for a in axes])
    # a BLOCK macro the file defines disagrees with the step: its value is what to change
    mine = [f"BLOCK_{a}" for a in axes if f"BLOCK_{a}" in terms.defined]
    instead = f" in place of your {_both(mine)}" if mine else ""
    several = (
        "compute several elements or load a halo" if terms.halo else "compute several elements"
    )
    return (
        f"If each block covers {value} elements {along}, say so: {blocks}{instead} (one "
        f"thread per element), or also {_both(tiles)} when threads {several}."
    )


def _both(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
