"""Text from the submission reaches the TA's terminal and pages only as text: compiler
output, #error and #pragma message text, printf output and file names hold terminal
escapes, bidi overrides and zero-width characters, and each report shows them as escapes
(\\x1b, \\u202e) or drops them, never as they are. The attacks are graded end to end on
the CPU backend."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from grader import cli, labs
from grader.batch.progress import Progress
from grader.model.result import Status
from grader.report import common, terminal
from grader.report import json as json_report

DATA = Path(__file__).parent / "data" / "reports"
BASELINE = (labs.get("matmul-naive").home / "baseline.cu").read_text()
# What a terminal obeys: clear the screen, set the window title, then erase the line and
# write a fake green score at its start; and the bidi override that shows a name reversed.
CLEAR, TITLE, FAKE = "\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x1b[2K\x1b[G\x1b[32;1mScore 7/7\x1b[0m"
ESCAPES = CLEAR + TITLE + FAKE
SHOWN = "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b[2K\\x1b[G\\x1b[32;1mScore 7/7\\x1b[0m"
RLO = "\u202e"
# Every character a line can lie with: C0 and C1 controls, bidi embeddings, overrides and
# isolates, zero-width ones, the BOM, line and paragraph separators, a tag character.
HIDDEN = (
    [chr(c) for c in range(0x20) if chr(c) not in "\n\t"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
    + ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u061c"]
    + ["\u2028", "\u2029", "\U000e0041", "\ud800"]
)


def raw_escapes(text: str) -> list[str]:
    """The characters of `text` that a terminal or a browser would not show as they are."""
    return [c for c in text if c in HIDDEN]


# -- the one helper ----------------------------------------------------------------------------


@pytest.mark.parametrize("char", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
def test_every_hidden_character_is_shown_as_its_escape(char):
    shown = common.printable(f"a{char}b")
    assert not raw_escapes(shown)
    code = ord(char)
    width = 2 if code < 0x100 else 4 if code < 0x10000 else 8
    letter = {2: "x", 4: "u", 8: "U"}[width]
    assert shown == f"a\\{letter}{code:0{width}x}b"


def test_text_people_write_is_left_as_it_is():
    text = "line 1\n\tindented 平铺\u3000(ideographic space)\u00a0nbsp, é, ✅ 🚀, \\x1b typed\n"
    assert common.printable(text) == text
    assert common.printable("crlf\r\nline") == "crlf\nline"
    assert common.printable("overwrite\rthis") == "overwrite\\x0dthis"


def test_printable_result_keeps_enums_and_numbers():
    result = json_report.read(DATA / "failing.json")
    result.submission = f"k{ESCAPES}{RLO}.cu"
    result.cases[0].output = ESCAPES
    shown = common.printable_result(result)
    assert shown.submission == f"k{SHOWN}\\u202e.cu"
    assert not raw_escapes(shown.cases[0].output)
    assert type(shown.status) is Status and shown.score == result.score
    assert shown.cases[0].sizes == result.cases[0].sizes
    assert result.submission.startswith("k\x1b")  # the original is left alone


def test_a_batch_prints_a_folder_name_as_text():
    stream = io.StringIO()
    Progress(stream, 1).graded(f"bob{CLEAR}{RLO}", "0/10", "failed", 1.0)
    assert not raw_escapes(stream.getvalue()) and "bob\\x1b[2J" in stream.getvalue()


def test_a_similar_pair_shows_its_texts_and_names_only_as_text(tmp_path, capsys):
    # the side-by-side page shows the whole text, comments and strings included
    source = (
        f"// {ESCAPES}{RLO} </td></tr></table><script>alert(1)</script>\n"
        f'const char* note = "{TITLE}</pre><img src=x onerror=alert(1)>";\n{BASELINE}'
    )
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in (f"ann{CLEAR}{RLO}<b>", "bob"):
        (folder / f"{name}.cu").write_text(source, encoding="utf-8")
    out = tmp_path / "similar"
    assert cli.main(["similar", "matmul-naive", str(folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    pages = [page.read_text(encoding="utf-8") for page in sorted(out.rglob("*.html"))]
    assert len(pages) == 2 and "ann" in printed
    for text in (printed, *pages):
        assert not raw_escapes(text)
    for page in pages:
        assert "<script>" not in page and "<img" not in page and "<b>" not in page
    pair = (out / "similar" / "pair-1.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;" in pair and SHOWN[:12] in pair


# -- graded on the CPU backend -----------------------------------------------------------------


def grade(tmp_path: Path, capsys, name: str, source: str, *extra: str) -> dict[str, str]:
    """Everything `grader check` wrote, by where: stdout, stderr and each report."""
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    out = tmp_path / "reports"
    files = {"json": "r.json", "html": "r.html", "markdown": "r.md", "junit": "r.xml"}
    argv = ["check", "matmul-naive", str(path), "--backend", "cpu", "--no-timing"]
    argv += [arg for fmt, file in files.items() for arg in (f"--{fmt}", str(out / file))]
    cli.main([*argv, *extra])
    written = dict(zip(("stdout", "stderr"), capsys.readouterr(), strict=True))
    written |= {fmt: (out / file).read_text(encoding="utf-8") for fmt, file in files.items()}
    return written


def test_error_text_and_a_file_name_with_escapes_reach_no_report_raw(tmp_path, capsys):
    name = f"{CLEAR}k{RLO}.cu"
    source = f'#error "{ESCAPES}"\n#pragma message("{TITLE}{RLO}")\n{BASELINE}'
    written = grade(tmp_path, capsys, name, source, "--color", "never")
    for where, text in written.items():
        assert not raw_escapes(text), where
    assert SHOWN in written["stdout"] and SHOWN in written["html"]
    assert "\\x1b[2J\\x1b[Hk\\u202e.cu" in written["stdout"]  # the file name
    real = r"^Score 0/\d+ on the public cases; \d+ more points are graded by the course \(.*\)$"
    assert re.search(real, written["stdout"], re.M)  # the real score, on its line
    # JSON keeps the text as it was, as a JSON escape
    report = json.loads(written["json"])
    assert report["submission"] == name and ESCAPES in report["compile"]["log"]


PRINTS = f'#include <cstdio>\n#pragma message("{TITLE}")\n' + BASELINE.replace(
    "P[row * Width + col] = sum;",
    "P[row * Width + col] = sum;\n"
    '        if (row == 0 && col == 0) printf("\\x1b[2J\\u202eScore 7/7\\n");',
)


def test_printf_output_and_pragma_messages_reach_no_report_raw(tmp_path, capsys):
    written = grade(tmp_path, capsys, "kernel.cu", PRINTS, "--color", "always")
    # the summary's own colours are the only escapes on the terminal
    assert not raw_escapes(re.sub(r"\x1b\[[0-9;]*m", "", written["stdout"]))
    assert "\\x1b[2J\\u202eScore 7/7" in written["stdout"]  # the printf excerpt
    for where in ("html", "markdown", "junit"):
        assert not raw_escapes(written[where]), where
    assert "\\x1b]0;pwned\\x07" in written["html"]  # the compile log's #pragma message


def test_a_missing_file_named_with_escapes_is_named_as_text(tmp_path, capsys):
    code = cli.main(["check", "matmul-naive", str(tmp_path / f"{CLEAR}{RLO}.cu")])
    err = capsys.readouterr().err
    assert code == 2 and not raw_escapes(err) and "\\x1b[2J" in err


def test_the_terminal_summary_colours_only_its_own_text():
    result = json_report.read(DATA / "failing.json")
    result.diagnostics[0].message = FAKE
    coloured = terminal.render(result, color=True)
    assert "\\x1b[32;1mScore 7/7" in coloured and FAKE not in coloured
