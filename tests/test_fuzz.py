"""Every parser of bytes the submission controls, fuzzed with hypothesis: its text (the
scanners, the similarity check), the compiled module as describe() reads it, the CPU
worker's records, the GPU worker's messages, PTX, and what the compilers and
compute-sanitizer say about it. Each test asserts that nothing but the parser's documented
error comes out, within DEADLINE for each example. EXAMPLES examples each (more for the
cheap ones); the examples are the same on every run, so that CI does not fail at random."""

from __future__ import annotations

import contextlib
import functools
import json
import tempfile
import unicodedata
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import labs
from grader.backends.cpu import blame, build, diagnose, elf, job, scan
from grader.backends.cpu.describe import describe
from grader.backends.cpu.shelf import Shelf
from grader.backends.cuda import errors, protocol, sanitizer
from grader.batch import similar
from grader.course.discover import Entry
from grader.course.isolated import result_of
from grader.course.pool import Job, Outcome
from grader.course.similarity import Comparison
from grader.errors import SetupError
from grader.judge import launch_macros
from grader.labs import common as lab_rules
from grader.labs import get as get_lab
from grader.model import source
from grader.model.launch import Buffer, Launch, RunOutcome, Scalar
from grader.model.result import Diagnostic, Kind
from grader.model.source import Submission
from grader.report import common, markdown
from grader.toolchain import nvcc

EXAMPLES = 150
DEADLINE = timedelta(seconds=5)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=DEADLINE,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MANY = settings(FUZZ, max_examples=3 * EXAMPLES)  # for parsers that take microseconds


# -- the submission's text ----------------------------------------------------------------

C_WORDS = [
    "__global__", "__device__", "__constant__", "__managed__", "__shared__", "extern", '"C"',
    "namespace", "static", "const", "int", "float", "void", "unsigned", "enum", "typedef",
    "template", "<", ">", "{", "}", "(", ")", "[", "]", ";", "=", ",", "*", "&", " ", "\n",
    "\t", "#", "#if 0\n", "#define ", "#ifdef ", "#ifndef ", "#else\n", "#endif\n", "#undef ",
    "#include ", "<cstdio>", '"k.h"', '"', "'", "\\", "\\\n", "/*", "*/", "//", 'R"(', ')"',
    "1'000", "0x1F", "16", "MASK_WIDTH", "BLOCK_X", "TILE_X", "TILE", "__syncthreads()", "if",
    "else", "return", "for", "__launch_bounds__(", "blockIdx.x", "blockDim.x", "threadIdx.x",
    "asm", "tex2D<", "cudaMalloc(", "int main(", "k", "x", "a", "\r", "\x00", "\u202e", "<<<",
    "__align__(16)", "__attribute__((", "))", "<<", ">>", "/", "%", "-", "+",
]  # fmt: skip
c_text = st.lists(st.one_of(st.sampled_from(C_WORDS), st.text(max_size=3)), max_size=120).map(
    "".join
)
LAUNCH = {"BLOCK_X": 16, "BLOCK_Y": 16, "BLOCK_Z": 1, "TILE_X": 16, "TILE_Y": 16, "TILE_Z": 1}
CONV = labs.get("conv2d")  # a mask, and a macro its cases vary
ERROR = [Diagnostic(Kind.COMPILE_ERROR, "k.cu:1: error", line=1)]


@FUZZ
@given(c_text)
def test_every_scanner_of_the_text_reads_any_text(text):
    kernels, variables = scan.kernels(text), scan.variables(text)
    scan.registration_entries(kernels, variables, len(scan.rewrite_static_shared(text)[1]))
    scan.unsupported(text)
    scan.rewrite_dynamic_shared(text)
    source.static_checks(text, lab_rules.FORBIDDEN)
    launch_macros.describe(text, LAUNCH, {"MASK_WIDTH": 5}, CONV)
    nvcc.grader_macros(ERROR, text, {"MASK_WIDTH": 5, "BLOCK_X": 16}, "k.cu")
    markdown.code(text, 40)
    markdown.md(text)


@FUZZ
@given(c_text, c_text)
def test_any_texts_are_compared_and_their_passages_are_lines_of_each(first, second):
    texts = {"a": first, "b": first + second}
    comparison = Comparison(texts, {"public/p.cu": second + first}, frozenset(), "", 10)
    for pair in comparison.pairs(0.0):
        for passage in comparison.passages(pair):
            for lines, name in ((passage.first, pair.first), (passage.second, pair.second)):
                shown = similar.lines(comparison.texts[name], [lines])
                assert 1 <= lines[0] <= lines[1] <= len(shown)


@FUZZ
@given(c_text, st.integers(min_value=-5, max_value=10**30))
def test_a_barrier_is_placed_on_any_line_of_any_text(text, line):
    # the line comes from the worker's record, which the submission may have written
    found = scan.barrier_context(text, line)
    assert isinstance(found, scan.BarrierContext)


@MANY
@given(st.text())
def test_printable_text_holds_nothing_a_terminal_obeys(text):
    shown = common.printable(text)
    assert all(c in "\n\t" or c.isprintable() or unicodedata.category(c) == "Zs" for c in shown)
    assert common.printable(shown) == shown


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes_are_read_as_a_submission(raw):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cu"
        path.write_bytes(raw)
        submission, problems = source.read_submission(path)
    assert isinstance(submission, Submission) and "\r\n" not in submission.text
    assert all(d.kind == "compile_error" for d in problems)
    # the compilers read the file's own bytes, whatever their encoding
    assert submission.compiled.encode("utf-8", source.SOURCE_ERRORS) == raw.replace(b"\r\n", b"\n")


# -- what the compilers say ---------------------------------------------------------------

# Numbers as the tools print them, and as a quoted student line can make them: any length.
number = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40).map(str),
    st.integers(min_value=1, max_value=5000).map(lambda n: "9" * n),
    st.sampled_from(["", "0", "00", "0123", "1,024", ",,"]),
)
words = st.text(max_size=12)
files = st.sampled_from(["k.cu", "kernel.cu", "<grader registration>", "/tmp/x/a.cu", "a.cu", ""])
severities = st.sampled_from(["error", "warning", "fatal error", "error #20-D", "note"])
log_line = st.one_of(
    st.builds("{}:{}:{}: {}: {}".format, files, number, number, severities, words),
    st.builds("{}:{}: {}: {}".format, files, number, severities, words),
    st.builds("{}({}): {}: {}".format, files, number, severities, words),
    st.builds("ptxas info    : Compiling entry function '{}' for 'sm_90'".format, words),
    st.builds("ptxas info    : Function properties for {}".format, words),
    st.builds("ptxas info    : Used {} registers, {} bytes smem, {} bytes cmem[0]".format,
              number, number, number),
    st.builds("    {} bytes stack frame, {} bytes spill stores, {} bytes spill loads".format,
              number, number, number),
    words,
)  # fmt: skip
log_text = st.lists(log_line, max_size=12).map("\n".join)


@FUZZ
@given(log_text, st.booleans())
def test_compiler_output_is_read_whatever_it_says(log, errors_only):
    found = nvcc.compile_diagnostics(log, "k.cu", errors_only)
    assert all(d.kind == "compile_error" for d in found)
    nvcc.clean_log(log, Path("/tmp/x"), "a.cu", "k.cu")
    assert all(r.registers is None or r.registers >= 0 for r in nvcc.parse_ptxas(log).values())
    build._errors(log, "k.cu")
    build._registration_errors(log)
    build._generic(log, "k.cu")


symbols = st.one_of(
    st.sampled_from(["_Z6matmulPKfS0_Pfi", "_Z6conv2dPKfPfii", "matmul", "k$1", "_Z"]),
    number.map(lambda n: f"_Z{n}k"),
)
ptx_types = st.sampled_from(["u32", "u64", "b8", "f32", "s32", "b32", "pred", "x"])
ptx_param = st.one_of(
    st.builds(".param .{} p{}[{}]".format, ptx_types, number, number),
    st.builds(".param .align 8 .{} p".format, ptx_types),
)
ptx_entry = st.builds(
    ".visible .entry {}(\n{}\n){}\n{{\n{}\n}}".format,
    symbols,
    st.lists(ptx_param, max_size=4).map(",\n".join),
    st.builds(".maxntid {}, {}, {}".format, number, number, number) | st.just(""),
    st.sampled_from(["ld.shared.f32 %f1, [s];", "atom.global.add.f32 %f1, [p], 1.0;",
                     "call foo;", "ld.const.f32 %f1, [Mc];", "", "{", "}"]),
)  # fmt: skip
ptx_variable = st.builds(
    ".{} .align 4 .{} {}[{}] = {{{}}};".format,
    st.sampled_from(["const", "global", "visible .global", "shared"]),
    ptx_types,
    st.sampled_from(["Mc", "grader_launch_config", "x"]),
    number,
    st.lists(number, max_size=6).map(", ".join),
)
ptx_text = st.lists(st.one_of(ptx_entry, ptx_variable, words), max_size=6).map("\n".join)


@FUZZ
@given(ptx_text)
def test_any_ptx_is_read_as_an_interface(ptx):
    interface = nvcc.parse_ptx(ptx)
    assert all(k.max_threads is None or k.max_threads >= 0 for k in interface.kernels.values())


hexadecimal = st.integers(min_value=0, max_value=2**80).map(hex)
accesses = st.sampled_from(["Read", "Write"])
sanitizer_line = st.one_of(
    st.builds("========= Invalid __{}__ {} of size {} bytes".format,
              st.sampled_from(["global", "shared", "local"]), st.sampled_from(["read", "write"]),
              number),
    st.builds("=========     at matmul+0x10 in {}:{}".format, files, number),
    st.builds("=========     by thread ({},{},{}) in block ({},{},{})".format,
              number, number, number, number, number, number),
    st.builds("=========     Address {} is out of bounds".format, hexadecimal),
    st.builds("=========     and is {} bytes after the nearest allocation at {}".format,
              number, hexadecimal),
    st.builds("========= Error: Race reported between {} access at k+0x1 in kernel.cu:{}".format,
              accesses, number),
    st.builds("=========     and {} access at k+0x2 in kernel.cu:{} [{} hazards]".format,
              accesses, number, number),
    st.builds("========= Barrier error detected. {}".format, words),
    st.builds("========= {}".format, words),
    words,
)  # fmt: skip


@MANY
@given(
    st.lists(sanitizer_line, max_size=10).map("\n".join),
    st.sampled_from(["memcheck", "racecheck", "synccheck"]),
)
def test_any_sanitizer_log_is_read_as_findings(log, tool):
    findings = sanitizer.parse(log, tool)
    context = sanitizer.Context("matmul", "k.cu", 40, ("Width",))
    sanitizer.diagnostics(findings, context)


@MANY
@given(st.text(max_size=200))
def test_any_driver_message_is_named(message):
    errors.lookup(message)
    errors.is_sticky(message)
    errors.driver_text(message)
    errors.diagnostic(message, "matmul", "grid (1,1,1) of blocks (16,16,1)", True)


# -- the GPU worker's messages ------------------------------------------------------------

json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
array_spec = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["<f4", "<i4", "|u1", "<u8", "O", "V8", "S3", "<c8", "zz", 5]),
        "shape": st.lists(st.integers(min_value=-3, max_value=2**62), max_size=3),
    }
)


@MANY
@given(
    st.one_of(
        st.binary(max_size=200),
        st.fixed_dictionaries(
            {"arrays": st.lists(array_spec, max_size=3)}, optional={"x": json_value}
        ).map(lambda h: json.dumps(h).encode()),
        json_value.map(lambda v: json.dumps(v).encode()),
    ),
    st.binary(max_size=256),
)
def test_a_gpu_workers_message_is_decoded_or_refused(head, payload):
    try:
        message = protocol.decode(head, payload)
    except protocol.ChannelClosed:
        return
    assert isinstance(message.header, dict)
    assert sum(a.nbytes for a in message.arrays) <= len(payload)


# -- the CPU worker's records -------------------------------------------------------------

# Each record of the runner with the fields it carries (runtime/*.cpp), each of the kind of
# value it holds, or any other: a forged record parses as far as its writer wants.
any_value = st.one_of(number, hexadecimal, words.filter(lambda t: not any(c.isspace() for c in t)))
count = st.one_of(number, hexadecimal, st.sampled_from(["0", "1", "4", "-1", "0x"]))
triple = st.one_of(
    st.lists(number, min_size=3, max_size=3).map(",".join), st.sampled_from(["", "1,2", "a,b,c"])
)
sizes = st.one_of(st.lists(count, min_size=1, max_size=4).map(",".join), st.just("-"))
said = st.one_of(words.map(lambda t: t.encode().hex()), any_value)
kinds = st.sampled_from(["buffer", "shared", "static_shared", "stack_overflow", "address",
                         "assert", "divide", "trap", "abort", "float", "x"])  # fmt: skip
whats = st.sampled_from(["lines", "warp", "shared_tail", "arity", "kernel_missing", "load",
                         "constant_readonly", "constant_missing", "preload", "x"])  # fmt: skip
RECORDS = {
    "fault": {"kind": kinds, "pass": count, "line": count, "pc": count, "thread": triple,
              "block": triple, "index": count, "offset": count, "bytes": count,
              "access": st.sampled_from(["read", "write", "x"]), "element": count, "dims": sizes,
              "name": said, "decl_line": count, "addr": count, "stack": count, "signal": count,
              "text": said},
    "timeout": {"phase": st.sampled_from(["load", "kernel"]), "pass": count, "thread": triple,
                "block": triple, "pc": count},
    "error": {"what": whats, "detail": said, "params": count, "args": count},
    "pass": {"n": count, "us": count, "float_atomics": count},
    "divergence": {"what": whats, "block": triple, "thread": triple, "other": triple,
                   "line": count, "other_line": count, "op": count, "other_state": count},
    "printf": {"total": count, "kept": count},
    "overlap": {"index": count, "element": count, "first": triple, "second": triple,
                "before": count, "after": count, "count": count},
    "sandbox": {"landlock": count, "error": said},
}  # fmt: skip
record = st.sampled_from(sorted(RECORDS)).flatmap(
    lambda name: st.fixed_dictionaries({}, optional=RECORDS[name]).map(
        lambda fields: " ".join([name, *(f"{k}={v}" for k, v in fields.items())])
    )
)
WIDTH = 20


def matmul_launch() -> Launch:
    m = np.ones(WIDTH * WIDTH, np.float32)
    p = np.full(WIDTH * WIDTH, np.nan, np.float32)
    args = [Buffer("M", m, False), Buffer("N", m.copy(), False), Buffer("P", p, True)]
    args.append(Scalar("Width", "int", WIDTH))
    return Launch("matmul", (2, 2, 1), (16, 16, 1), 0, args, {})


@MANY
@given(
    st.lists(st.one_of(record, st.text(max_size=20)), max_size=12),
    st.sampled_from([None, 0, 0, 1, 3, 4, 42, 42, 42, 43, -9, -11]),
    st.sampled_from([0, 1, 2, 2, 2]),  # passes whose outputs came back
    st.data(),
)
def test_any_worker_records_give_a_verdict(lines, returncode, outputs, data):
    launch = matmul_launch()
    report = job.Report(returncode)
    # the runner's own records, then "load", then whatever the submission added
    setup = ["sandbox landlock_abi=3 landlock=1 seccomp=1", "pool threads=2"]
    job._read_records("\n".join([*setup, "load", *lines]).encode(), report)
    for p in range(min(outputs, job.PASSES)):
        # the output's bits as the kernel left them: NaN, the shared fill, anything
        bits = data.draw(st.binary(min_size=4 * WIDTH * WIDTH, max_size=4 * WIDTH * WIDTH))
        inputs = [b.data.copy() for b in launch.buffers()[:2]]
        report.outputs[p] = [*inputs, np.frombuffer(bits, np.float32).copy()]
        report.pads[(p, 2)] = job.Pad(
            data.draw(st.integers(0, 9)), data.draw(st.none() | st.integers(0, 9))
        )
    artifact = build.Artifact(
        Path("/nonexistent/module.so"), "kernel.cu", text="__syncthreads();\n" * 5
    )
    try:
        with Shelf() as shelf:
            found = diagnose.outcome(report, artifact, shelf, launch, 1.0)
    except blame.Unexplained:
        return  # the control run decides whose it is
    assert isinstance(found, RunOutcome)
    assert all(d.message for d in found.diagnostics)


@FUZZ
@given(
    st.lists(st.one_of(record, st.text(max_size=20)), max_size=8), st.sampled_from([1, 3, 4, -9])
)
def test_records_before_load_are_a_setup_error(lines, returncode):
    report = job.Report(returncode)
    job._read_records("\n".join(lines).encode(), report)
    report.loaded = False
    artifact = build.Artifact(Path("/nonexistent"), "kernel.cu")
    with pytest.raises(SetupError), Shelf() as shelf:
        diagnose.outcome(report, artifact, shelf, matmul_launch(), 1.0)


# -- the compiled module --------------------------------------------------------------------


@functools.cache
def compiled_module() -> bytes:
    """A module the CPU backend compiled from a lab's reference, with __constant__ and
    __shared__ declarations, so that describe() finds every kind of descriptor."""
    from grader.backends.cpu import CpuBackend

    lab = get_lab("conv2d")
    text = (labs.get(lab.name).home / "reference.cu").read_text()
    macros = lab.macro_values(lab.public_cases[0].sizes)
    built = CpuBackend().build(Submission(Path("kernel.cu"), text), macros, lab.launch_defaults)
    assert built.ok, built.diagnostics
    return built.artifact.module.read_bytes()


def regions(data: bytes) -> list[tuple[int, int]]:
    """Where the ELF headers, section headers, symbols, strings and constant data are:
    the bytes describe() reads, which a mutation should hit."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.so"
        path.write_bytes(data)
        parsed = elf.Elf(path)
    shoff = int.from_bytes(data[0x28:0x30], "little")
    found = [(0, 64), (shoff, len(data) - shoff)]
    wanted = (".symtab", ".strtab", ".dynsym", ".dynstr", ".rodata", ".data.rel.ro", ".dynamic")
    found += [(s.offset, s.size) for s in parsed.sections if s.name in wanted and s.size]
    return found


@FUZZ
@given(st.data())
def test_a_damaged_module_is_described_or_refused(data):
    module = compiled_module()
    spots = regions(module)
    damaged = bytearray(module)
    for _ in range(data.draw(st.integers(1, 24))):
        start, size = data.draw(st.sampled_from(spots))
        at = start + data.draw(st.integers(0, max(0, size - 1)))
        value = data.draw(st.integers(0, 255) | st.sampled_from([0xFF, 0x7F, 0x80]))
        if at < len(damaged):
            damaged[at] = value
    cut = data.draw(st.none() | st.integers(0, len(damaged)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.so"
        path.write_bytes(bytes(damaged[:cut]))
        for read in (describe, elf.dynamic, lambda p: elf.Elf(p).undefined()):
            try:
                read(path)
            except elf.ElfError as error:
                assert str(error).endswith(".")


@FUZZ
@given(st.binary(max_size=512))
def test_any_bytes_are_described_or_refused(raw):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.so"
        path.write_bytes(b"\x7fELF\x02\x01" + raw)
        for read in (describe, elf.dynamic):
            with contextlib.suppress(elf.ElfError):
                read(path)


# -- the batch worker's report ----------------------------------------------------------------


@FUZZ
@given(json_value)
def test_any_report_from_a_batch_worker_is_taken_or_refused(report):
    lab = get_lab("matmul-naive")
    entry = Entry("s", [], Path("s/kernel.cu"), Path("s/kernel.cu"))
    outcome = Outcome(
        Job("s", Path("s/kernel.cu")), report=report if isinstance(report, dict) else {"x": report}
    )
    result, why = result_of(outcome, lab, entry)
    assert (result is None) == bool(why)
