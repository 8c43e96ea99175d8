"""The contract between the CPU backend and its runner (grader.backends.cpu.contract), from
both sides: the runtime uses every name of the contract.h its build writes and defines
none of them itself, the shim's copies of the codes are the table's, a job the grader
writes has each key the table names as often as it says, the runner refuses one that
does not, and its build fails when read_job lacks a key; each check also fails on a
side that adds what the other lacks. The same of the compilers' sandbox and its options
(grader.toolchain.sandbox.contract). And the worker's records, as
grader.backends.cpu.protocol reads them."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from grader.backends.cpu import blame, contract, job, protocol, runner
from grader.backends.cpu.build import Artifact
from grader.backends.cpu.describe import Variable
from grader.backends.cpu.shim import INCLUDE
from grader.model.launch import Buffer, Launch, Scalar
from grader.toolchain import cxx, header, sandbox

# The runtime's C++, which includes contract.h; the runner links the sandbox's too, which
# knows no contract of the CPU backend's.
RUNTIME_CPP = sorted(runner.RUNTIME.glob("*.[ch]*"))
NO_LIBRARY = "/nonexistent/libgrader-contract.so"
# Records the runtime writes that no class of protocol reads: "load" is the marker
# job._read_records looks for, "pool" and "done" are there for a reader of the pipe.
UNCLASSED = {"load", "pool", "done"}
RUNTIME_NAMES = "EXIT|JOB|FILE"  # the prefixes of contract.h's families of names


def _defined(written: str) -> set[str]:
    """The names a written header defines: its enumerators and constants."""
    enumerators = re.findall(r"^    ([A-Z]\w*)(?: = \d+)?,$", written, re.MULTILINE)
    constants = re.findall(r"^constexpr [\w :*]+?\b([A-Z]\w*)(?:\[\w*\])? = ", written, re.M)
    return set(enumerators) | set(constants)


def _cpp_mismatch(written: str, sources: dict[str, str], families: str) -> list[str]:
    """What C++ `sources` and the header `written` for them disagree on: a name of the
    header no source uses, a name of the header's `families` (its prefixes) that a source
    uses and the header lacks, a name of the header a source defines itself."""
    names = _defined(written)
    text = "\n".join(sources.values())
    found = [f"{n} is used by no source" for n in sorted(names) if not re.search(rf"\b{n}\b", text)]
    for name in sorted(set(re.findall(rf"\b(?:{families})_[A-Z_]+\b", text)) - names):
        found.append(f"{name} is not the contract's")
    for path, source in sources.items():
        for name in sorted(names):
            if re.search(rf"\b{name}\s*=[^=]", source):
                found.append(f"{path} defines {name} itself")
    return found


def _runtime_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in RUNTIME_CPP}


def test_the_runtime_uses_every_name_of_its_header_and_defines_none():
    assert _defined(runner.contract_header()) >= {"EXIT_FAULT", "CANARY", "FIBER_STACK", "JOB_ARG"}
    assert _cpp_mismatch(runner.contract_header(), _runtime_sources(), RUNTIME_NAMES) == []


def test_the_check_of_the_runtime_fails_on_a_name_either_side_adds(monkeypatch):
    sources = _runtime_sources()
    with_fill = {**sources, "extra.cpp": "fill_words(p, n, STACK_FILL); return EXIT_GONE;"}
    assert _cpp_mismatch(runner.contract_header(), with_fill, RUNTIME_NAMES) == [
        "EXIT_GONE is not the contract's"
    ]
    own = {**sources, "extra.h": "constexpr uint32_t CANARY = 0x7FC0DEADu;"}
    assert _cpp_mismatch(runner.contract_header(), own, RUNTIME_NAMES) == [
        "extra.h defines CANARY itself"
    ]
    monkeypatch.setitem(contract.NUMBERS, "STACK_FILL", ("uint32_t", 1))
    assert _cpp_mismatch(runner.contract_header(), sources, RUNTIME_NAMES) == [
        "STACK_FILL is used by no source"
    ]


def test_the_runners_folder_changes_with_the_table(monkeypatch):
    before = runner.runtime_hash()
    monkeypatch.setitem(contract.NUMBERS, "CANARY", ("uint32_t", 0x7FC0BEEF))
    assert runner.runtime_hash() != before


# -- the shim's copies: include/grader_codes.h ----------------------------------------------


def _enumerators(text: str) -> set[str]:
    """The members of every enum in `text`."""
    bodies = re.findall(r"\benum\b[^{;]*\{(.*?)\}", text, re.DOTALL)
    return {m.split("=")[0].strip() for b in bodies for m in b.split(",") if m.strip()}


def test_the_shims_codes_are_the_tables():
    """Their values the runner's build checks (contract.h's static_asserts); here, that
    grader_codes.h names no code more or fewer than the table."""
    ours = {name.removeprefix("grader::") for name in runner.shim_codes()}
    assert _enumerators((INCLUDE / "grader_codes.h").read_text()) == ours


def test_the_runner_does_not_build_against_a_shim_that_disagrees(tmp_path):
    codes = (
        (INCLUDE / "grader_codes.h").read_text().replace("GRADER_BAR_OR = 3", "GRADER_BAR_OR = 4")
    )
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "grader_codes.h").write_text(codes)
    (tmp_path / runner.HEADER).write_text(runner.contract_header())
    check = tmp_path / "check.cpp"
    check.write_text(f'#include "{runner.HEADER}"\n')
    done = _syntax(check, ["-I", str(tmp_path)])
    assert done.returncode != 0 and "GRADER_BAR_OR is not the contract's" in done.stderr


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


def test_each_barrier_of_the_shim_passes_the_code_the_grader_names_it_by():
    shim = _shim_ops("GRADER_BAR_")
    assert {name: contract.Barrier[op] for name, op in shim.items()} == {
        call: code for code, call in contract.BARRIER_CALLS.items()
    }


def test_each_warp_operation_of_the_shim_passes_the_code_the_grader_names_it_by():
    """The grader once named only codes 0-8, so a hang in __reduce_add_sync() said "a
    warp operation"."""
    shim = _shim_ops("GRADER_WARP_")
    assert {name: contract.WarpOp[op] for name, op in shim.items()} == {
        call: code for code, call in contract.WARP_CALLS.items()
    }


def test_every_base_has_its_c_type():
    assert set(contract.BASE_TYPES) == set(contract.Base) - {contract.Base.OTHER}


# -- job.txt ------------------------------------------------------------------------------


def _full_job(folder: Path, monkeypatch) -> None:
    """A job with every kind of line the grader writes: buffers and a scalar, a constant,
    a carried variable, a library to preload (one that is not there), the user a worker
    of root's becomes, and a profile, which names the variables."""
    monkeypatch.setattr(job, "_libraries", lambda module: (NO_LIBRARY,))
    variables = {"Mc": Variable(16, "const", False), "flag": Variable(4, "global", True)}
    artifact = Artifact(folder / job.MODULE, "kernel.cu", variables=variables)
    ones = np.ones(16, np.float32)
    args = [Buffer("M", ones, False), Buffer("P", ones.copy(), True), Scalar("n", "int", 16)]
    launch = Launch("k", (1, 1, 1), (16, 1, 1), 0, args, {"Mc": np.ones(4, np.float32)})
    settings = job.Settings(jobs=1, require_isolation=True, profile=True)
    state = {"flag": bytes(4)}
    job._write_job(folder, artifact, launch, 5.0, settings, (65534, 65534), state, "0123abcd")


def _keys_mismatch(written: Counter, table: dict[str, tuple[int, int]]) -> list[str]:
    """What a job written with every kind of line and the table disagree on: a key the
    table lacks, one the job lacks, or one more often than the table allows."""
    found = [f"{k} is not the table's" for k in sorted(set(written) - set(table))]
    for key, (least, most) in table.items():
        if written[key] < max(least, 1) or (most >= 0 and written[key] > most):
            found.append(f"{key} {written[key]} times")
    return found


def _written(folder: Path) -> Counter:
    lines = (folder / contract.FILES["job"]).read_text().splitlines()
    return Counter(line.split()[0] for line in lines if line.strip())


def test_a_job_the_grader_writes_has_every_key_of_the_table(tmp_path, monkeypatch):
    _full_job(tmp_path, monkeypatch)
    assert _keys_mismatch(_written(tmp_path), contract.JOB_KEYS) == []


def test_the_check_of_the_job_fails_on_a_key_either_side_adds(tmp_path, monkeypatch):
    _full_job(tmp_path, monkeypatch)
    written = _written(tmp_path)
    table = {**contract.JOB_KEYS, "memory": header.ONCE}
    assert _keys_mismatch(written, table) == ["memory 0 times"]
    assert _keys_mismatch(written + Counter(["landlock"]), contract.JOB_KEYS) == [
        "landlock is not the table's"
    ]


def _run_job(folder: Path) -> job.Report:
    """The runner on the job in `folder`, its records on its standard output."""
    done = subprocess.run(
        [str(runner.executable()), "run", str(folder), "1"], capture_output=True, timeout=60
    )
    report = job.Report(done.returncode)
    job._read_records(done.stdout, report)
    return report


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda lines: [*lines, "landlock 0"], 'a key it does not know, "landlock"'),
        (
            lambda lines: [ln for ln in lines if not ln.startswith("kernel ")],
            'the key "kernel" 0 times',
        ),
        (lambda lines: [*lines, "grid 1 1 1"], 'the key "grid" 2 times'),
        (
            lambda lines: [("jobs 2" if ln == "jobs 1" else ln) for ln in lines],
            "a profile on more than one pool thread",
        ),
    ],
    ids=["unknown", "missing", "twice", "profile-on-threads"],
)
def test_the_runner_refuses_a_job_it_does_not_read_as_the_graders_bug(
    tmp_path, monkeypatch, change, said
):
    _full_job(tmp_path, monkeypatch)
    path = tmp_path / contract.FILES["job"]
    path.write_text("\n".join(change(path.read_text().splitlines())) + "\n")
    report = _run_job(tmp_path)
    error = report.first_setup(protocol.Error)
    assert not report.loaded and report.returncode == contract.Exit.USAGE
    assert (error.what, error.detail) == ("job_key", said)
    message = blame.before_loading(report)
    assert message.startswith("The CPU backend cannot run kernels on this machine: its worker")
    assert f"({said})" in message and "a bug of the grader" in message


def test_the_runner_reads_the_job_the_grader_writes(tmp_path, monkeypatch):
    """It goes on to its next step: loading the libraries the module needs. The
    job's token it has read is no longer in its file by then."""
    _full_job(tmp_path, monkeypatch)
    token = tmp_path / contract.FILES["token"]
    assert token.read_text() == "0123abcd"
    report = _run_job(tmp_path)
    error = report.first_setup(protocol.Error)
    assert report.returncode == contract.Exit.SETUP and error.what == "preload", error
    assert NO_LIBRARY in error.detail
    assert token.read_bytes() == bytes(8)


def _syntax(source: Path, includes: list[str]) -> subprocess.CompletedProcess:
    """The runner's compiler and flags on `source`, checked, not compiled."""
    flags = [*runner.FLAGS, *includes, "-I", str(source.parent), *runner.INCLUDES]
    cmd = [cxx.compiler().path, *flags, "-fsyntax-only", str(source)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_the_runner_does_not_build_when_read_job_lacks_a_key_of_the_table(tmp_path, monkeypatch):
    monkeypatch.setitem(contract.JOB_KEYS, "memory", header.ONCE)
    (tmp_path / runner.HEADER).write_text(runner.contract_header())
    copy = tmp_path / "runner.cpp"
    copy.write_text((runner.RUNTIME / "runner.cpp").read_text())
    done = _syntax(copy, [])
    assert done.returncode != 0 and "JOB_MEMORY" in done.stderr, done.stderr


# -- the sandbox's contract: grader.toolchain.sandbox.contract ----------------------------

SANDBOX_NAMES = "EXEC|OPTION"  # the prefixes of sandbox_contract.h's families of names
LIMITS = ["--timeout", "5", "--cpu", "5", "--memory", str(1 << 30), "--fsize", str(1 << 20)]


def _main() -> dict[str, str]:
    return {"main.cpp": (sandbox.FOLDER / "main.cpp").read_text()}


def test_the_sandbox_uses_every_name_of_its_header_and_defines_none():
    assert _defined(sandbox.contract_header()) >= {"EXEC_NO_FILES", "OPTION_READ", "OPTION_RULES"}
    assert _cpp_mismatch(sandbox.contract_header(), _main(), SANDBOX_NAMES) == []


def test_the_check_of_the_sandbox_fails_on_a_name_either_side_adds(monkeypatch):
    more = {"main.cpp": _main()["main.cpp"] + "\nreturn EXEC_KILLED;"}
    assert _cpp_mismatch(sandbox.contract_header(), more, SANDBOX_NAMES) == [
        "EXEC_KILLED is not the contract's"
    ]
    monkeypatch.setitem(sandbox.contract.OPTIONS, "--nice", header.ONCE)
    assert _cpp_mismatch(sandbox.contract_header(), _main(), SANDBOX_NAMES) == [
        "OPTION_NICE is used by no source"
    ]


def _options(argv: list[str]) -> Counter:
    """The options of a `sandbox exec` command line: the words before "--" that start
    with "--" (a value never does)."""
    return Counter(a for a in argv[3 : argv.index("--")] if a.startswith("--"))


def test_the_grader_gives_sandbox_exec_every_option_as_often_as_the_table_says(monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Layers(landlock=True, files_blocked=True))
    argv = sandbox.sandboxed(["/bin/true"], "/tmp/folder", status_fd=5, reads=["/opt"])
    assert _keys_mismatch(_options(argv), sandbox.contract.OPTIONS) == []
    assert _keys_mismatch(_options(argv) + Counter(["--nice"]), sandbox.contract.OPTIONS) == [
        "--nice is not the table's"
    ]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (LIMITS, 0),
        ([*LIMITS, "--timeout", "9"], sandbox.contract.Exit.USAGE),
        (LIMITS[:4] + LIMITS[6:], sandbox.contract.Exit.USAGE),
        ([*LIMITS, "--nice", "1"], sandbox.contract.Exit.USAGE),
    ],
    ids=["as-the-grader-gives-them", "twice", "without-memory", "unknown"],
)
def test_sandbox_exec_refuses_a_command_line_not_as_the_table_says(tmp_path, options, code):
    reads = [w for path in sandbox.compiler_reads("/bin/true") for w in ("--read", path)]
    argv = [str(sandbox.executable()), "exec", str(tmp_path), *reads, *options, "--", "/bin/true"]
    done = subprocess.run(argv, capture_output=True, text=True, env=cxx.clean_env(), timeout=60)
    assert done.returncode == code, done.stderr
    assert ("usage: sandbox exec" in done.stderr) == (code == sandbox.contract.Exit.USAGE)


def test_the_sandbox_does_not_build_when_parse_exec_lacks_an_option(tmp_path, monkeypatch):
    monkeypatch.setitem(sandbox.contract.OPTIONS, "--nice", header.ONCE)
    (tmp_path / sandbox.HEADER).write_text(sandbox.contract_header())
    flags = [*sandbox.FLAGS, "-I", str(tmp_path), "-I", str(sandbox.FOLDER), "-fsyntax-only"]
    cmd = [cxx.compiler().path, *flags, str(sandbox.FOLDER / "main.cpp")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode != 0 and "OPTION_NICE" in done.stderr, done.stderr


# -- the worker's records -----------------------------------------------------------------


def test_every_record_the_runtime_writes_is_one_the_grader_reads_and_no_other():
    written = set()
    for source in [*RUNTIME_CPP, *sandbox.LINKED]:
        written |= set(re.findall(r'\.str\("(\w+)"\)', source.read_text()))
    assert written == set(protocol.KINDS) | UNCLASSED


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
