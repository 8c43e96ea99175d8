"""One reader of CUDA source (grader.model.lexer): every question the grader asks of a
file's text gets the compiler's answer, whatever the spelling.

What the compilers read, asked of them below: g++ 12 with the CPU backend's -std=gnu++17
and nvcc 13 (whose preprocessor is the host's g++ in its GNU dialect) read `%:define` and
a directive whose name a line splice cuts (`#def\\<newline>ine`) as `#define`, and ignore
the trigraph `??=define` ("trigraph ??= ignored, use -trigraphs to enable"), as they
ignore `??/` before a line end, which is no splice."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from grader import labs
from grader.backends.cpu import scan, shim
from grader.errors import SetupError
from grader.judge import launch_macros
from grader.labs import common
from grader.model import lexer, source
from grader.model.lexer import Directive
from grader.toolchain import cxx, nvcc

# How a directive is spelt, and whether the compiler reads it as one.
SPELLINGS = {
    "#": (lambda name: f"#{name}", True),
    "%:": (lambda name: f"%:{name}", True),
    "splice": (lambda name: f"#{name[:3]}\\\n{name[3:]}", True),
    "??=": (lambda name: f"??={name}", False),
}
LAUNCH = {"BLOCK_X": 16, "BLOCK_Y": 16, "BLOCK_Z": 1, "TILE_X": 16, "TILE_Y": 16, "TILE_Z": 1}


def spelt(spelling: str, name: str) -> str:
    return SPELLINGS[spelling][0](name)


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_lexing_question_gets_the_compilers_answer_in_every_spelling(spelling):
    read = SPELLINGS[spelling][1]
    define, include = spelt(spelling, "define"), spelt(spelling, "include")
    # a macro's value: the launch the file sets
    described = launch_macros.describe(
        f"{define} BLOCK_X 32\n", LAUNCH, {}, labs.get("matmul-naive")
    )
    assert described.defined == (["BLOCK_X"] if read else [])
    # a redefinition of the grader's own macro
    found = nvcc.grader_macros([], f"{define} MASK_WIDTH 3\n", {"MASK_WIDTH": 5}, "k.cu")
    assert bool(found) == read
    if read:
        assert found[0].line == 1 and "#defines MASK_WIDTH again" in found[0].message
        assert "#define MASK_WIDTH 3 / #endif" in found[0].message  # its own value advised
    # an include: of another file, of a library, of a header the CPU backend cannot run
    assert bool(source.file_rules(f'{include} "kernel.h"\n')) == read
    assert nvcc.may_read_files(f"{include} <cstdio>\n") == read
    assert bool(source.static_checks(f"{include} <cublas_v2.h>\n", common.FORBIDDEN)) == read
    assert bool(scan.unsupported(f"{include} <cuda_pipeline.h>\n")) == read
    # a kernel written in a macro's definition is none
    assert bool(scan.kernels(f"{define} K __global__ void k() {{}}\n")) != read


def preprocessed(compiler: list[str], text: str, folder: Path) -> str:
    (folder / "probe.h").write_text("int included_probe;\n")
    (folder / "k.cu").write_text(text)
    run = subprocess.run(
        [*compiler, "-E", "-I", str(folder), str(folder / "k.cu")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.stdout


def compilers() -> list:
    """The CPU backend's compiler with its dialect, and nvcc, each where there is one."""
    std = next(flag for flag in shim.MODULE_FLAGS if flag.startswith("-std="))
    try:
        host = [cxx.compiler().path, std, "-x", "c++"]
    except SetupError:
        host = None
    nvcc_found = [nvcc.find()] if nvcc.find() else None
    return [
        pytest.param(found, id=name, marks=pytest.mark.skipif(not found, reason=f"no {name}"))
        for name, found in (("c++", host), ("nvcc", nvcc_found))
    ]


@pytest.mark.parametrize("compiler", compilers())
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_compilers_read_each_spelling_as_the_grader_does(tmp_path, spelling, compiler):
    read = SPELLINGS[spelling][1]
    define, include = spelt(spelling, "define"), spelt(spelling, "include")
    text = f'{define} PROBE 32\n{include} "probe.h"\nint defined_probe = PROBE;\n'
    out = preprocessed(compiler, text, tmp_path)
    assert ("int defined_probe = 32;" in out) == read, out[-400:]
    assert ("int included_probe;" in out) == read, out[-400:]
    assert [d.name for d in lexer.directives(text)] == (["define", "include"] if read else [])


def test_a_splice_after_the_hash_is_an_include_the_library_rule_leaves_to_the_module():
    text = "#\\\ninclude <cub/block/block_reduce.cuh>\n"
    assert [d.name for d in lexer.directives(text)] == ["include"] and nvcc.may_read_files(text)
    # the early text check reads a # and its include on one line: reduction's
    # cub_spliced_include has its EXPECTED say what the compiled module's headers show
    assert source.static_checks(text, common.FORBIDDEN) == []


def test_a_trigraph_backslash_splices_no_line():
    text = "#inc??/\nlude <x.h>\n"
    assert not nvcc.may_read_files(text)
    assert [d.name for d in lexer.directives(text)] == ["inc"]


def test_a_universal_character_name_spells_no_directive():
    # g++: "universal character \u0069 is not valid in an identifier", and no include
    assert not nvcc.may_read_files("#\\u0069nclude <x.h>\n")


TEXTS = [
    "#define X 1\nint a = X; // c\n/* x\ny */ int b;\n",
    "%:define BLOCK_X 32\nint b<:2:> = <% 1, 2 %>;\n",
    "__glo\\\nbal__ void f() {}\n",
    "x = a\\\nb; __shared__ float t[4];\n",
    "a\\\n\\\n\\\nb c\\  \nd\n",
    '"ab\\"c" \'x\' R"d(a\n#define Z 1\n)d" 1\'000;\n',
    'std::vector<::std::string> v; int a<::>; "open\nint x; /* open',
    "#include <x.h>\r#define Q 2\r\nint q;\n",
    "<\\\n<%\\\n%>\\\n:\\\n>",
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_view_keeps_the_texts_length_and_lines(text):
    line_ends = text.count("\n") + text.replace("\r\n", "").count("\r")
    for view in (lexer.uncommented(text), lexer.unquoted(text), lexer.code(text)):
        assert len(view) == len(text) and view.count("\n") == line_ends


def test_the_views():
    text = (
        '%:define S(x) %:x /* a\n b */ "//"\n'
        "int t<:2:> = <% 1, 2 %>; // one\n"
        "__glo\\\nbal__ void k(char c = 'x') {}\n"
    )
    assert lexer.uncommented(text) == (
        '# define S(x) # x     \n      "//"\n'
        "int t[ 2]  = {  1, 2 } ;       \n"
        "__global__ \n void k(char c = 'x') {}\n"
    )
    assert lexer.unquoted(text).split("\n")[1] == '      "  "'
    assert lexer.unquoted(text).endswith("char c = ' ') {}\n")
    assert lexer.code(text) == (
        "                      \n          \n"
        "int t[ 2]  = {  1, 2 } ;       \n"
        "__global__ \n void k(char c = ' ') {}\n"
    )
    assert lexer.directives(text) == [Directive(1, "define", ' S(x) # x            "//"')]


def test_a_comments_line_ends_are_inside_a_directive_and_start_none():
    # as g++ reads them: the comment's line end neither ends the #define nor starts a line
    text = "#define Y /* multi\nline */ 32\nint a; /* c\n */ #define X 1\n/* c\n */ #define Z 2\n"
    assert lexer.directives(text) == [
        Directive(1, "define", " Y                  32"),
        Directive(6, "define", " Z 2"),
    ]


def test_a_line_comment_runs_on_over_a_splice():
    assert lexer.code("// a comment \\\nint hidden;\nint shown;\n").split("\n")[2] == "int shown;"


def test_a_comment_left_open_is_found_at_its_line():
    assert lexer.open_comment("int a;\n/* open\n") == 2
    assert lexer.open_comment("int a; /**/ /*/\n") == 1
    assert lexer.open_comment("int a; /* closed */\n") is None
    assert lexer.open_comment('"/*"\n') is None
