"""A course author's lab, written as docs/lab-model.md and docs/expected-toml.md describe
it and with nothing else from the grader: a gather, out[i] = table[index[i]], whose
index array and table length the lab draws itself (Lab.draw), with a sampler that
follows the indices and a fault hint of its own. In a lab root of its own it passes
`grader validate-lab` on the CPU, and its hidden cases' indices come from the secret."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from grader import cli, labs
from grader.errors import ExitCode
from grader.judge import cases

LAB = '''
"""out[i] = table[index[i]] for i < n: the index array and the table's length are drawn
together, so every index is inside the table."""

import numpy as np

from grader.judge import hints
from grader.model.lab import Array, Case, Kernel, Lab, Param, Role, Sampler


def draw(rng, sizes):
    table = int(rng.integers(1, 2 * sizes["n"] + 2))
    return {"index": rng.integers(0, table, sizes["n"])}, {"table": table}


def needs(sizes, axes, read):
    return {"table": (read("index", (axes[0],)),)}


def past_the_table(fault):
    if hints.strayed(fault).get("table") != "past the end":
        return None
    size = fault.sizes["table"]
    return f"A thread read past the end of table ({size} elements): read table[index[i]]."


LAB = Lab(
    title="Gather",
    summary="out[i] = table[index[i]].",
    kernel=Kernel(
        "gather",
        (
            Param("index", "const int*", Role.INPUT),
            Param("table", "const float*", Role.INPUT),
            Param("out", "float*", Role.OUTPUT),
            Param("n", "int", Role.SCALAR),
        ),
    ),
    inputs=(
        Array("index", lambda s: (s["n"],), "int32"),
        Array("table", lambda s: (s["table"],)),
    ),
    outputs=(Array("out", lambda s: (s["n"],)),),
    draw=draw,
    reference=lambda a, s: {"out": a["table"][a["index"]]},
    extent=lambda s: (s["n"], 1, 1),
    public_cases=(Case("n-1000", {"n": 1000}), Case("n-517", {"n": 517})),
    hidden_cases=(Case("n-1", {"n": 1}, "hidden"), Case("n-70001", {"n": 70001}, "hidden")),
    random_sizes=lambda rng: {"n": int(rng.integers(1, 5000))},
    random_cases=1,
    timing_sizes={"n": 1 << 24},
    work=lambda s: (0.0, 12.0 * s["n"]),
    dims=1,
    hints=(hints.nothing_written,),
    fault_hints=(past_the_table,),
    bound="memory",
    sampler=Sampler(needs, lambda s, v, axes: {"out": v["table"]}),
)
'''

RIGHT = """
__global__ void gather(const int* index, const float* table, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = table[index[i]];
}
"""

KERNELS = {
    "reference.cu": RIGHT,
    "baseline.cu": RIGHT,
    "wrong/by_position.cu": RIGHT.replace("table[index[i]]", "table[i]"),
    "wrong/EXPECTED.toml": """
        ["by_position.cu"]
        verdict = "failed"
        kinds = ["out_of_bounds"]
        keywords = ["past the end of table", "read table[index[i]]"]
    """,
}

TEMPLATE = """
__global__ void gather(const int* index, const float* table, float* out, int n) {
    // TODO: out[i] = table[index[i]] for i < n
}
"""

README = """
# Lab `gather`: Gather

Write `__global__ void gather(const int* index, const float* table, float* out, int n)`:
out[i] = table[index[i]] for every i < n.

The public cases are `n-1000` and `n-517`; your instructor runs 3 hidden cases: `n-1`,
`n-70001` and one of random size. Speed is measured at n = 16777216.

| part | points | how |
|---|---|---|
| public cases | 3 | shared equally by the 2 public cases |
| hidden cases | 4 | shared equally by the 3 hidden cases |
| speed | 3 | on a GPU only |

A speedup of 1 or more earns all 3 speed points and 0.25 or less earns none.

No thread may make more than 1/8 of the global loads and atomics of the profile case (of the
lab reference's there, where the kernel makes more).
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """The course's lab root, added for this test alone."""
    monkeypatch.setattr(labs, "_added", [])
    monkeypatch.delenv(labs.ENV, raising=False)
    root = tmp_path / "course"
    home = root / "reference_kernels" / "gather"
    write(home / "lab.py", LAB)
    for name, text in KERNELS.items():
        write(home / name, text)
    write(root / "student_template" / "gather" / "kernel.cu", TEMPLATE)
    write(root / "student_template" / "gather" / "README.md", README)
    return root


def test_a_gather_written_from_the_docs_passes_validate_lab(root, capsys):
    code = cli.main(["validate-lab", "gather", "--labs", str(root), "--backend", "cpu"])
    out = capsys.readouterr().out
    assert code == ExitCode.OK, out
    for role in ("reference", "baseline", "template", "wrong", "readme"):
        assert f"ok   cpu  {role}" in out


def test_its_hidden_indices_come_from_the_secret_and_the_table_length_is_not_shown(root):
    labs.add_roots([root])
    lab = labs.get("gather")
    one, other = cases.hidden_cases(lab, "secret-1"), cases.hidden_cases(lab, "secret-2")
    big = [c for c in one if c.name == "n-70001"][0]
    again = [c for c in other if c.name == "n-70001"][0]
    first, second = cases.make_inputs(lab, big), cases.make_inputs(lab, again)
    assert not np.array_equal(first["index"], second["index"])
    assert first["table"].size == big.sizes["table"]
    assert first["index"].min() >= 0 and first["index"].max() < big.sizes["table"]
    assert big.drawn == ("table",) and "table" not in big.shown_sizes
    assert cases.make_inputs(lab, cases.public_cases(lab)[0])["index"].size == 1000
