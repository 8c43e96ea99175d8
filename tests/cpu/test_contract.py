"""What the C++ runtime and the Python grader share, tied: one test for each constant
written on both sides (the exit codes, the barrier and warp operation codes, the canary,
the shared fill), and the CPU worker's records as grader.backends.cpu.protocol reads them."""

from __future__ import annotations

import re

from grader.backends.cpu import protocol
from grader.backends.cpu.runner import RUNTIME
from grader.backends.cpu.shim import INCLUDE
from grader.model.launch import CANARY_BITS, SHARED_FILL_BITS
from grader.toolchain import sandbox


def _enum(text: str, prefix: str) -> dict[str, int]:
    """The members of the C++ enums in `text` whose names start with `prefix`."""
    return {n: int(v) for n, v in re.findall(rf"\b{prefix}(\w+) = (\d+)", text)}


def _shim_ops(prefix: str) -> dict[str, str]:
    """Each CUDA function of the shim (grader_cuda.h) and the op code it passes: its
    macro's own, or that of the helper the macro calls."""
    text = (INCLUDE / "grader_cuda.h").read_text().replace("\\\n", " ")
    helpers = dict(re.findall(rf"\b(\w+)\([^)]*\)\s*{{\s*grader_rt_\w+\({prefix}(\w+)", text))
    found = {}
    for name, body in re.findall(r"^#define (__\w+)\(.*?\)(.*)$", text, re.MULTILINE):
        code = re.search(rf"\b{prefix}(\w+)", body)
        helper = re.search(r"::grader::(\w+)\(", body)
        if code:
            found[f"{name}()"] = code.group(1)
        elif helper and helper.group(1) in helpers:
            found[f"{name}()"] = helpers[helper.group(1)]
    return found


def test_the_exit_codes_are_the_runners():
    """grader/backends/cpu/protocol.py's EXIT_* and runtime/rt.h's enum Exit."""
    runner = _enum((RUNTIME / "rt.h").read_text(), "EXIT_")
    ours = {n.removeprefix("EXIT_"): v for n, v in vars(protocol).items() if n.startswith("EXIT_")}
    assert ours and all(runner.get(name) == code for name, code in ours.items()), (ours, runner)


def test_the_barrier_codes_are_the_shims():
    codes = _enum((INCLUDE / "grader_ops.h").read_text(), "GRADER_BAR_")
    shim = _shim_ops("GRADER_BAR_")
    assert {name: codes[op] for name, op in shim.items()} == {
        name: code for code, name in protocol.BARRIERS.items()
    }


def test_the_warp_operation_codes_are_the_shims():
    """Every warp function of the shim, with the code the scheduler records for it: the
    grader once named only codes 0-8, so a hang in __reduce_add_sync() said "a warp
    operation"."""
    codes = _enum((INCLUDE / "grader_ops.h").read_text(), "GRADER_WARP_")
    shim = _shim_ops("GRADER_WARP_")
    assert len(shim) == len(codes)
    assert {name: codes[op] for name, op in shim.items()} == {
        name: code for code, name in protocol.WARP_OPS.items()
    }


def test_the_canary_is_the_runners():
    """The fill around each buffer: runtime/runner.cpp's CANARY, and CANARY_BITS, which
    the grader checks it against (and the GPU writes)."""
    text = (RUNTIME / "runner.cpp").read_text()
    assert int(re.search(r"\bCANARY = (0x[0-9A-Fa-f]+)u;", text).group(1), 16) == CANARY_BITS


def test_the_shared_fill_is_the_schedulers():
    """One fill for both backends: the C++ scheduler's and the one the GPU writes."""
    text = (RUNTIME / "scheduler.h").read_text()
    fill = re.search(r"\bSHARED_FILL = (0x[0-9A-Fa-f]+)u;", text).group(1)
    assert int(fill, 16) == SHARED_FILL_BITS


def test_every_record_the_grader_reads_is_one_the_runtime_writes():
    written = set()
    for path in [*RUNTIME.glob("*.cpp"), *sandbox.LINKED]:
        written |= set(re.findall(r'\.str\("(\w+)"\)', path.read_text()))
    assert set(protocol.KINDS) <= written, set(protocol.KINDS) - written


def test_a_record_reads_its_fields_typed_and_a_forged_one_reads_as_defaults():
    fault, bare = protocol.parse(
        "fault kind=static_shared pass=1 thread=1,2,3 pc=0x1a name=5469 dims=12,12 text=zz"
    )
    assert not bare and isinstance(fault, protocol.Fault)
    assert (fault.kind, fault.pass_, fault.thread, fault.pc) == ("static_shared", 1, (1, 2, 3), 26)
    assert (fault.name, fault.dims, fault.block, fault.element) == ("Ti", (12, 12), None, 4)
    forged, _ = protocol.parse("timeout pass=x thread=1,2 pcs=0x10,y,0x20 barriers=-3")
    assert (forged.pass_, forged.thread, forged.pcs, forged.barriers) == (0, None, (16, 32), ())
    assert protocol.parse("load") == (protocol.Other("load"), True)
