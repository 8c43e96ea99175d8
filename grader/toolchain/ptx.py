"""PTX read as instructions, never as text: comments and string literals are dropped
first, so that an `asm` statement whose text holds a comment naming `ld.shared` or `atom`
is no instruction, and statements are split on `;` and braces, each with its guard
predicate, its opcode and its operands. The lab rules read what the kernel's code holds
from here (grader.toolchain.nvcc), and the GPU's census instruments the same instructions
(grader.backends.cuda.census)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Comments, and string literals (blanked inside their quotes: `.file 1 "    "`).
_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
_FUNCTION = re.compile(
    r"\.(?P<kind>entry|func)\s+(?:\([^)]*\)\s*)?(?P<symbol>[\w$]+)\s*(?:\([^)]*\))?[^{;]*\{"
)
_LEAD = re.compile(r"^\s*(?:[\w$]+:|\.loc\b[^\n]*)?\s*")
_SCOPE = re.compile(r"^\s*[{}]\s*")  # a block's brace, where a statement starts
_GUARD = re.compile(r"^@!?%?[\w$]+\s+")
_OPCODE = re.compile(r"^[A-Za-z][\w.:]*")
_CALLEE = re.compile(r"^(?:\([^)]*\)\s*,\s*)?(?P<callee>[\w$]+)")


def clean(ptx: str) -> str:
    """`ptx` with every comment and the inside of every string literal blanked: spaces,
    newlines kept, so that an offset in it is the same offset in `ptx`."""

    def blank(match: re.Match) -> str:
        token = match.group(0)
        inside = token[1:-1] if token.startswith('"') else token
        spaces = re.sub(r"[^\n]", " ", inside)
        return f'"{spaces}"' if token.startswith('"') else spaces

    return _NOISE.sub(blank, ptx)


@dataclass
class Instruction:
    guard: str  # the predicate that guards it ("@%p1", "@!%p1"), or ""
    opcode: str  # with its modifiers: "ld.shared.f32"
    operands: str
    start: int  # offset in the PTX of the instruction (its guard), past any label

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def modifiers(self) -> list[str]:
        """The opcode's parts after the first, each without a `::` qualifier."""
        return [part.split("::")[0] for part in self.opcode.split(".")[1:]]

    def callee(self) -> str | None:
        """The function a `call` names."""
        if self.base != "call":
            return None
        match = _CALLEE.match(self.operands)
        return match["callee"] if match else None


@dataclass
class Function:
    symbol: str
    entry: bool  # a kernel (.entry), not a device function (.func)
    body: list[Instruction] = field(default_factory=list)
    start: int = 0  # offset in the clean PTX of the body, past its `{`
    blocks: bool = False  # the body holds a block of its own: `{ .reg .b32 %t; ... }`


def functions(code: str) -> dict[str, Function]:
    """Every function defined in `code` (clean PTX), by symbol, with its instructions."""
    out = {}
    for match in _FUNCTION.finditer(code):
        end = _closing(code, match.end())
        function = Function(match["symbol"], match["kind"] == "entry", start=match.end())
        function.body, function.blocks = _instructions(code, match.end(), end)
        out[function.symbol] = function
    return out


def _closing(code: str, start: int) -> int:
    """The offset of the brace that closes the one just before `start`, or the end."""
    depth = 1
    for brace in re.finditer(r"[{}]", code[start:]):
        depth += 1 if brace.group() == "{" else -1
        if not depth:
            return start + brace.start()
    return len(code)


def _instructions(code: str, start: int, end: int) -> tuple[list[Instruction], bool]:
    """The instructions between `start` and `end`, each whole (a vector operand's braces
    too: `{%f1, %f2}`), and whether a block's braces are among them."""
    out, blocks = [], False
    position = start
    for piece in re.split(r"(;)", code[start:end]):
        at, position = position, position + len(piece)
        statement = piece
        while True:  # labels, .loc lines (which end without a `;`) and braces come first
            lead = _LEAD.match(statement)
            if not lead.group(0):
                lead = _SCOPE.match(statement)
                blocks = blocks or lead is not None
                if lead is None:
                    break
            statement, at = statement[lead.end() :], at + lead.end()
        statement = statement.rstrip()
        if piece == ";" or not statement or statement.startswith("."):
            continue  # directives: .reg, .loc, .pragma
        guard = _GUARD.match(statement)
        rest = statement[guard.end() :] if guard else statement
        opcode = _OPCODE.match(rest)
        if opcode is None:
            continue
        predicate = guard.group(0).strip() if guard else ""
        operands = rest[opcode.end() :].strip()
        out.append(Instruction(predicate, opcode.group(0), operands, at))
    return out, blocks


def reached(table: dict[str, Function], symbol: str) -> list[Function]:
    """The function `symbol` and every function it calls, directly or not."""
    seen: dict[str, Function] = {}
    todo = [symbol]
    while todo:
        name = todo.pop()
        if name in seen or name not in table:
            continue
        seen[name] = table[name]
        todo += [c for c in (i.callee() for i in table[name].body) if c]
    return list(seen.values())


def reads_shared(ins: Instruction) -> bool:
    """A load, atomic or matrix load from shared memory, a copy out of it, or taking the
    generic address of it (a generic load through that address reads it)."""
    mods = ins.modifiers
    if ins.base in ("ld", "ldu", "ldmatrix", "atom", "red", "cvta") or ins.opcode.startswith(
        "wmma.load"
    ):
        return "shared" in mods
    if ins.base == "cp":  # cp.async.bulk.global.shared::cta: shared memory to global
        return any(a == "global" and b == "shared" for a, b in zip(mods, mods[1:], strict=False))
    return False


def is_atomic(ins: Instruction) -> bool:
    """An atomic read-modify-write, in any state space."""
    return ins.base in ("atom", "red")
