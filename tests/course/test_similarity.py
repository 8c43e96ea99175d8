"""Similarity across a class (grader/course/similarity.py): renamed copies are found, code
that is only the template or the class's boilerplate links no one, and a submission's
text cannot hide a copy behind macros, operator spellings or padding, nor make the
comparison slow."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import similarity_kit as kit

from grader import defaults, labs
from grader.course import similarity
from grader.course.similarity import Comparison, common_limit, kept_names

LAB = labs.get(kit.LAB)
KEPT = kept_names(LAB)
THRESHOLD = defaults.SIMILAR_THRESHOLD


def compare(submissions: dict[str, str], public: dict[str, str] | None = None) -> Comparison:
    return Comparison(
        submissions, public or {}, KEPT, kit.template(), common_limit(len(submissions))
    )


def symbols(text: str) -> list[str]:
    return [t.symbol for t in similarity.tokens(text, KEPT)]


def names(pairs: list[similarity.Pair]) -> list[tuple[str, str]]:
    return [(p.first, p.second) for p in pairs]


# -- the class of 40 ---------------------------------------------------------------------


def test_the_pool_alone_links_no_pair():
    # the precondition of the next test: the labs' own kernels it starts from are not
    # each other's copies beyond the threshold
    pool = {**kit.pool(), kit.TEMPLATE: kit.template()}
    assert len(pool) == 37
    assert names(compare(pool).pairs(THRESHOLD)) == []


def test_the_renamed_copies_and_the_public_copy_are_the_top_pairs_of_40():
    class_ = kit.submissions()
    assert len(class_) == 40
    pairs = compare(class_, kit.public()).pairs(THRESHOLD)
    assert names(pairs) == [(kit.PUBLIC_COPY, kit.PUBLIC), kit.COPIES]
    public, copies = pairs
    assert public.public and public.score == 1.0
    assert not copies.public and copies.score > 0.9
    # below them, nothing comes near: the next pair shares a third of the smaller
    everything = compare(class_, kit.public()).pairs(0.0)
    assert names(everything[:2]) == names(pairs)
    assert everything[2].score < 0.4


def test_the_template_alone_matches_nothing():
    comparison = compare(kit.submissions(), kit.public())
    assert comparison.prints[kit.TEMPLATE].own == {}
    assert all(kit.TEMPLATE not in (p.first, p.second) for p in comparison.pairs(0.0))
    # nor does a class of templates, nor the template as a public solution
    alone = compare({"a": kit.template(), "b": kit.template()}, {"pub/t.cu": kit.template()})
    assert alone.pairs(0.0) == []


def test_the_labs_own_copies_are_found():
    # the kernels the pool leaves out are the naive baseline with a little added
    lab = kit.home(kit.LAB)
    texts = {
        "baseline": (lab / "baseline.cu").read_text(),
        "no_shared_memory": (lab / "wrong" / "no_shared_memory.cu").read_text(),
        "histogram": (kit.home("histogram") / "reference.cu").read_text(),
    }
    assert names(compare(texts).pairs(THRESHOLD)) == [("baseline", "no_shared_memory")]


def test_passages_give_the_lines_of_each_side():
    class_ = kit.submissions()
    comparison = compare(class_, kit.public())
    copies = comparison.pairs(THRESHOLD)[1]
    passages = comparison.passages(copies)
    assert passages
    dana, eli = class_[copies.first].split("\n"), class_[copies.second].split("\n")
    for passage in passages:
        first, second = passage.first, passage.second
        assert 1 <= first[0] <= first[1] <= len(dana)
        assert 1 <= second[0] <= second[1] <= len(eli)
    assert any("__syncthreads" in line for line in dana[passages[0].first[0] - 1 :])


# -- what is compared --------------------------------------------------------------------


KERNEL = (labs.get("matmul-naive").home / "baseline.cu").read_text()  # the course's first


def test_names_numbers_comments_and_layout_change_nothing():
    renamed = (
        KERNEL.replace("row", "r").replace("col", "c").replace("sum", "acc")
        .replace("Width", "n").replace("0.0f", "0.f").replace("M", "A")
        .replace("    ", "\t").replace(";", " ; // done\n")
    )  # fmt: skip
    renamed = "/* my own work */\n" + renamed.replace("{", '{ /* "}" */')
    assert symbols(renamed) == symbols(KERNEL)


def test_cuda_and_the_labs_names_stay_and_the_students_are_one_symbol():
    found = symbols(KERNEL)
    for kept in ("__global__", "matmul", "blockIdx", "threadIdx", "float", "for", "if"):
        assert kept in found
    assert "row" not in found and "Width" not in found and "M" not in found
    assert similarity.IDENTIFIER in found and similarity.NUMBER in found
    assert symbols("atomicAdd(&x, 1); float4 v; __syncthreads(); BLOCK_X;") == [
        "atomicAdd", "(", "&", "V", ",", "N", ")", ";", "float4", "V", ";",
        "__syncthreads", "(", ")", ";", "BLOCK_X", ";",
    ]  # fmt: skip


def test_a_macro_hides_no_code():
    plain = "int i = threadIdx.x + (blockIdx.x * blockDim.x);"
    aliased = (
        "#define TX threadIdx.x\n#define GX (blockIdx.x * blockDim.x)\n"
        "#define START TX + GX\nint i = START;"
    )
    assert symbols(aliased) == symbols(plain)
    # a function-like macro's definition stays as code, so a kernel inside one is compared
    hidden = "#define BODY(n) for (int k = 0; k < n; ++k) sum += a[k];\nBODY(8)"
    assert symbols(hidden)[:4] == ["#", "define", "V", "("] and "for" in symbols(hidden)
    # the operators' other spellings, and digraphs, are the operators
    assert symbols("if (a and not b) x <: 0 :> = 1;") == symbols("if (a && !b) x[0] = 1;")


@pytest.mark.parametrize(
    "text",
    [
        "#define A A\nA",  # itself
        "#define A B\n#define B A\nA",  # each other
        "".join(f"#define M{i} M{i + 1} M{i + 1}\n" for i in range(40)) + "M0",  # 2**40
        "".join(f"#define M{i} M{i + 1}\n" for i in range(5000)) + "M0",  # deep
        "#define E\n#define A " + "E " * 1000 + "\nA",  # many empty ones
    ],
    ids=["self", "mutual", "exponential", "deep", "empty"],
)
def test_a_macro_that_expands_without_end_stops_as_its_name(text):
    assert len(symbols(text)) <= similarity.EXPANSION + 10


OPS = "+-*/"


def test_padding_a_copy_does_not_lower_its_score():
    original = kit.planted()[kit.COPIES[0]]
    sums = ["x" + "".join(f" {OPS[(i >> 2 * j) & 3]} x" for j in range(4)) for i in range(256)]
    padded = original + "".join(
        f"__device__ float pad{i}(float x) {{ return {sum_}; }}\n" for i, sum_ in enumerate(sums)
    )
    pair = compare({"original": original, "padded": padded}).pairs(THRESHOLD)[0]
    assert pair.score == 1.0 and pair.of_second < 0.5  # of the smaller one: all of it


def test_boilerplate_links_no_students_but_still_a_public_solution():
    common = common_limit(40)
    class_ = {f"s{i}": KERNEL for i in range(common + 1)}
    class_ |= {f"t{i}": "int x;" for i in range(40 - len(class_))}
    comparison = compare(class_, {"pub/k.cu": KERNEL})
    pairs = comparison.pairs(THRESHOLD)
    assert pairs and all(p.public for p in pairs)
    assert len(pairs) == common + 1
    # one fewer, and it is no longer the class's: every two of them are linked
    fewer = compare({f"s{i}": KERNEL for i in range(common)} | {"t": "int x;"})
    assert len(fewer.pairs(THRESHOLD)) == common * (common - 1) // 2


def test_the_hashes_are_the_same_in_every_process():
    # a batch, its resumed run and a merge of its shards must find the same pairs
    script = (
        "from grader.course import similarity as s; import similarity_kit as k; "
        "print(sorted(s.fingerprints(k.template(), frozenset(), frozenset()).own.items()))"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join(sys.path)}
        run = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1 and len(outputs.pop()) > 100
