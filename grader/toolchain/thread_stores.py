"""Which kernels store into global memory only at their own thread's element along x, read
from the PTX: every store's address is a pointer parameter plus B x (blockIdx.x x
blockDim.x + threadIdx.x), with one B for each parameter, at least the bytes a store
writes. The blocks of a grid one block high then store disjoint bytes, so the CPU
backend's pool threads need not note which block stored each element (runtime/
stores.cpp): a call before every store, which cost saxpy on 2 pool threads 4 times its
time.

The proof reads only registers defined once in the kernel, by instructions no predicate
guards, from its parameters and %ctaid.x, %ntid.x and %tid.x, which no loop changes. A
call, an atomic, or any other instruction that may write global memory besides `st` (a
bulk copy, a surface store, wmma.store) leaves a kernel unproven, and so does a store at
an offset from that address, or a block inside its body (where `.reg .b64 %rd1;` would
declare anew a register the kernel has)."""

from __future__ import annotations

import re
from collections import Counter

from grader.toolchain import ptx

# What may write global memory, besides `st`: its operands are not read here.
_OTHER_WRITES = {
    "atom", "red", "call", "cp", "wmma", "sust", "sured", "multimem", "tensormap", "stmatrix",
    "discard",
}  # fmt: skip
# The largest scale an index may have: below 2^31 (the launch's bound) times it, no
# address wraps, so distinct threads' addresses differ.
_SCALE = 1 << 32
_LOCAL_SPACES = {"shared", "local", "param"}  # a store into one of them is no global store
_SPECIAL = {"%ctaid.x": ("ctaid",), "%ntid.x": ("ntid",), "%tid.x": ("tid",)}
_REGISTER = re.compile(r"%[\w$.]+")
_FIRST = re.compile(r"\s*(\{[^}]*\}|[^,]*)")  # an instruction's first operand
_LITERAL = re.compile(r"^(?:0[xX][0-9a-fA-F]{1,8}|\d{1,9})$")
_PARAM = re.compile(r"^\[(?P<symbol>[\w$]+)_param_(?P<index>\d{1,4})\]$")
_ADDRESS = re.compile(r"^\[(?P<register>%[\w$]+)(?:\+0)?\]$")
_TYPE = re.compile(r"^[bfsu](?P<bits>8|16|32|64|128)$")
_INTS = re.compile(r"^[bsu](?:32|64)$")

Value = tuple


def stores_by_thread(function: ptx.Function) -> dict[int, int] | None:
    """For a kernel whose every global store is at its thread's element along x: each
    pointer parameter stored through (its index) -> B, the bytes of that element. None
    where a store is not, or an instruction may write global memory otherwise, or a
    block inside its body may declare a register anew."""
    if function.blocks:
        return None
    stores = []
    for ins in function.body:
        base = ins.base
        if base in _OTHER_WRITES:
            return None
        if base == "st" and not _LOCAL_SPACES & set(ins.modifiers):
            stores.append(ins)
    definitions = _definitions(function.body) if stores else {}
    values: dict[str, Value | None] = {}
    strides: dict[int, int] = {}
    for ins in stores:
        address = _ADDRESS.match(_first(ins.operands))
        width = _store_bytes(ins.modifiers)
        value = (
            _value(address["register"], function.symbol, definitions, values) if address else None
        )
        if width is None or value is None or value[0] != "address":
            return None
        _, param, stride = value
        if strides.setdefault(param, stride) != stride or width > stride:
            return None
    return strides


def _definitions(body: list[ptx.Instruction]) -> dict[str, ptx.Instruction | None]:
    """Each register written once -> its instruction (None where it is written more, or
    under a predicate). Every register in an instruction's first operand counts as written
    unless that operand is an address: more than the instruction writes, never less."""
    writes: Counter[str] = Counter()
    last: dict[str, ptx.Instruction] = {}
    for ins in body:
        first = _first(ins.operands)
        if first.startswith("["):
            continue
        for register in _REGISTER.findall(first):
            writes[register] += 1
            last[register] = ins
    return {r: (last[r] if n == 1 and not last[r].guard else None) for r, n in writes.items()}


def _first(operands: str) -> str:
    return _FIRST.match(operands).group(1).strip()


def _operands(text: str) -> list[str]:
    """The operands, split on the commas outside braces and brackets."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char in "{["
        depth -= char in "}]"
        if char == "," and not depth:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()]


def _store_bytes(modifiers: list[str]) -> int | None:
    lanes = next((int(m[1:]) for m in modifiers if m in ("v2", "v4", "v8")), 1)
    bits = next((int(t["bits"]) for t in map(_TYPE.match, modifiers) if t), None)
    return None if bits is None else lanes * bits // 8


def _value(operand: str, symbol: str, definitions: dict, values: dict) -> Value | None:
    """What `operand` holds, in the terms of the proof: ("param", index), ("ctaid",),
    ("ntid",), ("tid",), ("base",) for ctaid x ntid, ("index", scale, wide) for scale x
    (base + tid), ("address", param, scale), ("literal", n); None for anything else."""
    if operand in _SPECIAL:
        return _SPECIAL[operand]
    if _LITERAL.match(operand):
        return ("literal", int(operand, 0))
    if operand not in values:
        values[operand] = None  # a register defined through itself is nothing known
        ins = definitions.get(operand)
        if ins is not None:
            values[operand] = _computed(ins, symbol, definitions, values)
    return values[operand]


def _computed(ins: ptx.Instruction, symbol: str, definitions: dict, values: dict) -> Value | None:
    operands = _operands(ins.operands)
    if not _REGISTER.fullmatch(operands[0]):
        return None  # one of several it writes: a vector's lane, a predicate pair
    if ins.base == "ld" and ins.modifiers[:1] == ["param"] and len(operands) == 2:
        param = _PARAM.match(operands[1])
        wide = ins.modifiers[-1] in ("u64", "b64", "s64")
        return (
            ("param", int(param["index"])) if param and param["symbol"] == symbol and wide else None
        )
    sources = [_value(o, symbol, definitions, values) for o in operands[1:]]
    if None in sources:
        return None
    return _combined(ins, sources)


def _combined(ins: ptx.Instruction, sources: list[Value]) -> Value | None:
    """The value an instruction computes from its sources' values."""
    base, mods = ins.base, ins.modifiers
    kinds = sorted(s[0] for s in sources)
    if base == "mov" or (base == "cvta" and mods[:2] == ["to", "global"]):
        return sources[0] if len(sources) == 1 else None
    if base == "cvt" and len(sources) == 1 and _widening(mods):
        value = sources[0]  # values below 2^31 (the launch's bound) keep
        if value[0] == "index":
            return ("index", value[1], True)
        return value if value[0] in ("base", "ctaid", "ntid", "tid") else None
    if not all(_INTS.match(m) or m in ("lo", "wide") for m in mods):
        return None
    wide = "wide" in mods or mods[-1].endswith("64")
    if base in ("mul", "mad") and kinds[:2] == ["ctaid", "ntid"] and "wide" not in mods:
        product = ("base",)
        if base == "mul" and len(sources) == 2:
            return product
        return ("index", 1, wide) if base == "mad" and sources[2] == ("tid",) else None
    if base == "add" and kinds == ["base", "tid"]:
        return ("index", 1, wide)
    if base == "mad" and "wide" in mods and len(sources) == 3:
        scaled = _scaled(sources[:2], wide=True)
        return _address(scaled, sources[2])
    if base == "mul" and len(sources) == 2:
        return _scaled(sources, wide)
    if base == "shl" and len(sources) == 2 and sources[1][0] == "literal" and wide:
        shift = sources[1][1]
        return _scaled([sources[0], ("literal", 1 << shift)], wide) if shift < 32 else None
    if base == "add" and len(sources) == 2:
        return _address(*sources) or _address(*sources[::-1])
    return None


def _widening(mods: list[str]) -> bool:
    """An integer conversion to as many bits or more: cvt.u64.u32."""
    if len(mods) != 2 or not all(map(_INTS.match, mods)):
        return False
    return int(mods[0][1:]) >= int(mods[1][1:])


def _scaled(sources: list[Value], wide: bool) -> Value | None:
    """An index times a literal, in 64 bits only (32 could wrap past the launch's bound),
    to a scale below _SCALE."""
    index, literal = sorted(sources, key=lambda s: s[0] == "literal")
    if index[0] != "index" or literal[0] != "literal" or not wide or literal[1] < 1:
        return None
    scale = index[1] * literal[1]
    return ("index", scale, True) if scale < _SCALE else None


def _address(scaled: Value | None, param: Value) -> Value | None:
    if scaled is None or scaled[0] != "index" or not scaled[2] or param[0] != "param":
        return None
    return ("address", param[1], scaled[1])
