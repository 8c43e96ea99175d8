"""Issue 18 on a real GPU, through `grader check --backend cuda`: text from the submission
(its name, #error text, printf output) reaches the terminal and the HTML report only as
text, and the whole grading stops at --submission-timeout, its worker with it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from process_kit import children

from grader import cli, labs

BASELINE = (labs.get("matmul-naive").home / "baseline.cu").read_text()
INFINITE = (labs.get("matmul-naive").home / "wrong" / "infinite_loop.cu").read_text()
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[2K\x1b[G\x1b[32;1mScore 7/7\x1b[0m\u202e"
# A correct kernel that prints the escapes from the GPU, after a #pragma message of them.
PRINTS = f'#include <cstdio>\n#pragma message("{ESCAPES}")\n' + BASELINE.replace(
    "P[row * Width + col] = sum;",
    "P[row * Width + col] = sum;\n"
    '        if (row == 0 && col == 0) printf("\\x1b[2J\\x1b]0;pwned\\x07\\u202eScore 7/7\\n");',
)


def check(tmp_path: Path, capsys, name: str, text: str, *extra: str) -> tuple[int, str, dict, str]:
    """(exit code, what was printed, the JSON report, the HTML report)."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    json_path, html_path = tmp_path / "r.json", tmp_path / "r.html"
    argv = ["check", "matmul-naive", str(path), "--backend", "cuda", "--no-timing"]
    code = cli.main([*argv, "--json", str(json_path), "--html", str(html_path), *extra])
    printed = "".join(capsys.readouterr())
    report = json.loads(json_path.read_text())
    return code, printed, report, html_path.read_text(encoding="utf-8")


def test_printf_and_compiler_text_reach_the_terminal_and_html_as_text(tmp_path, capsys):
    code, printed, report, html = check(tmp_path, capsys, "\x1b[31mk\u202e.cu", PRINTS)
    assert code == 0, printed
    plain = re.sub(r"\x1b\[[0-9;]*m", "", printed)  # the summary's own colours, if any
    for text in (plain, html):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b[2J" in printed and "\\x1b[31mk\\u202e.cu" in printed
    assert any("\x1b[2J" in c["output"] for c in report["cases"])  # JSON keeps it, escaped


def test_a_check_past_its_deadline_stops_with_its_worker(tmp_path, capsys):
    before = set(children())
    started = time.monotonic()
    code, printed, report, _ = check(
        tmp_path, capsys, "kernel.cu", INFINITE, "--timeout", "120", "--submission-timeout", "15"
    )
    assert time.monotonic() - started < 60, printed
    assert code == 1 and report["status"] == "error" and report["score"] == 0
    assert [d["kind"] for d in report["diagnostics"]] == ["timeout"]
    assert "took longer than 15 s" in report["diagnostics"][0]["message"]
    time.sleep(1.0)
    assert set(children()) <= before, "the GPU worker outlived the deadline"
