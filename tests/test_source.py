"""The submission as the grader reads it (grader/model/source.py): a file in any encoding
is graded, its bytes compiled as they are, with one warning for a file not UTF-8."""

from __future__ import annotations

from grader.model.source import SOURCE_ERRORS, read_submission, with_footer

# A Windows editor's Latin-1: "Größe" is 0x47 0x72 0xF6 0xDF 0x65, no UTF-8 sequence.
LATIN1 = b"// kernel\n#define TILE 16\n// Gr\xf6\xdfe des Blocks\n__global__ void k() {}\n"


def test_a_latin1_comment_is_no_problem(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(LATIN1)
    submission, problems = read_submission(path)
    assert problems == []
    assert submission.note == (
        "k.cu is not UTF-8 (byte 0xF6 at line 3): graded as it is; save it as UTF-8 to "
        "silence this."
    )
    assert "Gr\ufffd\ufffde" in submission.text  # the grader's own checks read replacements


def test_the_compilers_read_the_files_own_bytes(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(LATIN1)
    submission, _ = read_submission(path)
    written = with_footer(submission, (16, 16, 1)).encode("utf-8", SOURCE_ERRORS)
    assert written.startswith(LATIN1)


def test_a_utf8_file_is_read_as_it_is(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("// Größe\r\n__global__ void k() {}\r\n", encoding="utf-8")
    submission, problems = read_submission(path)
    assert (problems, submission.note, submission.source) == ([], "", None)
    assert submission.compiled == "// Größe\n__global__ void k() {}\n"
