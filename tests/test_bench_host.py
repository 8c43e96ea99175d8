"""bench/host.py: the line every GPU bench and the CPU bench print to say which host ran
them (figures of two hosts apart are not compared)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("host", ROOT / "bench" / "host.py")
host = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host)


def test_the_cpu_model_is_the_kernels_model_name(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: x\nmodel name\t: Some CPU 9000\n")
    assert host.cpu_model(cpuinfo) == "Some CPU 9000"
    assert host.cpu_model(tmp_path / "none")  # no such file: still a name to print


def test_the_host_line_names_the_cores_and_a_measured_time():
    assert host.hash_ms(repeat=1) > 0
    line = host.describe()
    assert (
        line.startswith("host: ") and " cores, load " in line and line.endswith(" ms on one thread")
    )


def test_the_benches_write_the_bytecode_a_timed_check_would_else_compile(tmp_path):
    """bench/host.py's compile_bytecode: the GPU machine sets PYTHONDONTWRITEBYTECODE, under
    which every `grader check` a bench timed compiled the grader again."""
    module = tmp_path / "grader" / "m.py"
    module.parent.mkdir()
    module.write_text("X = 1\n")
    host.compile_bytecode(tmp_path)
    assert list((module.parent / "__pycache__").glob("m.*.pyc"))
