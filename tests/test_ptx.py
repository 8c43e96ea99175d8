"""PTX read as instructions (grader.toolchain.ptx): comments and strings are no instructions, and
each instruction keeps its guard and its place, past labels and .loc lines."""

from __future__ import annotations

from grader.toolchain import ptx

PTX = """\
.version 8.0
.target sm_90
.address_size 64
.file 1 "/tmp/a ld.shared.f32 \\" atom.add.u32.cu"

.func (.param .b32 retval) helper(.param .b64 p)
{
\t.loc 1 3 5
\tld.shared.f32 \t%f1, [%r1];
\tret;
}

.visible .entry kernel(.param .u64 out)
{
\t.reg .pred %p<3>;
\t// ld.shared.f32 %f9, [%r9];
\t/*
\tatom.global.add.u32 %r1, [%rd1], 1;
\t*/
$L__BB0_1:
\t.loc 1 7 3
\t@!%p1 atom.global.add.u32 \t%r2, [%rd2], 1;
\t{ .reg .b32 %t; mov.b32 %t, 1; }
\tcall.uni (retval0), helper, (param0);
\tret;
}
"""


def test_comments_and_strings_are_blanked_in_place():
    code = ptx.clean(PTX)
    assert len(code) == len(PTX) and code.count("\n") == PTX.count("\n")
    assert "ld.shared.f32 %f9" not in code and "atom.global.add.u32 %r1" not in code
    assert '.file 1 "' in code and "atom.add" not in code.split("\n")[3]


def test_instructions_keep_their_guard_and_place_past_labels_and_loc_lines():
    code = ptx.clean(PTX)
    table = ptx.functions(code)
    assert sorted(table) == ["helper", "kernel"] and table["kernel"].entry
    kernel = table["kernel"].body
    assert [i.opcode for i in kernel] == ["atom.global.add.u32", "mov.b32", "call.uni", "ret"]
    atom = kernel[0]
    assert atom.guard == "@!%p1" and PTX[atom.start :].startswith("@!%p1 atom.global")
    assert ptx.is_atomic(atom) and not ptx.reads_shared(atom)
    assert kernel[2].callee() == "helper"
    helper = table["helper"].body[0]
    assert ptx.reads_shared(helper) and PTX[helper.start :].startswith("ld.shared.f32")


def test_what_a_kernel_reaches_includes_the_functions_it_calls():
    table = ptx.functions(ptx.clean(PTX))
    reached = ptx.reached(table, "kernel")
    assert [f.symbol for f in reached] == ["kernel", "helper"]
    assert any(ptx.reads_shared(i) for f in reached for i in f.body)


def test_a_vector_operand_stays_in_its_instruction_and_a_block_is_seen():
    code = ptx.clean(
        ".visible .entry v(.param .u64 p)\n{\n\tld.v2.f32 \t{%f1, %f2}, [%rd1];\n"
        "\tst.global.v2.f32 \t[%rd2], {%f1, %f2};\n\tret;\n}\n"
    )
    load, store, _ = ptx.functions(code)["v"].body
    assert load.operands == "{%f1, %f2}, [%rd1]" and store.operands == "[%rd2], {%f1, %f2}"
    assert not ptx.functions(code)["v"].blocks and ptx.functions(ptx.clean(PTX))["kernel"].blocks
