"""A lab's README (student_template/LAB/README.md), what the student reads: what it must
state, so that it cannot drift from the lab's definition, and the skeleton `grader
new-lab` writes, which states all of it and leaves the prose to the course.

It must state each kernel's signature, every fixed case by name, the count of hidden
cases, the scoring table and speed thresholds, and the timed sizes. Phrases are found
in the README's text with its runs of white space made one space, so lines may wrap
anywhere."""

from __future__ import annotations

from pathlib import Path

from grader.judge import cases
from grader.model.lab import Lab

README = "README.md"


def statements(lab: Lab) -> list[tuple[str, str]]:
    """What the README must state: (phrase, what it is) pairs."""
    s, public, hidden = lab.scoring, len(lab.public_cases), cases.hidden_count(lab)
    found = [(k.signature(), f"the signature of {k.name}") for k in lab.kernels]
    found += [
        (f"| public cases | {s.public:g} | shared equally by the {public} public cases |",
         "the scoring table's row for public cases"),
        (f"| hidden cases | {s.hidden:g} | shared equally by the {hidden} hidden cases",
         "the scoring table's row for hidden cases"),
        (f"| speed | {s.performance:g} |", "the scoring table's row for speed"),
        (f"A speedup of {s.target_speedup:g} or more earns all {s.performance:g} speed points "
         f"and {s.zero_speedup:g} or less earns none", "the speed thresholds"),
        (f"{hidden} hidden cases", "the count of hidden cases"),
    ]  # fmt: skip
    found += [(f"`{c.name}`", f"case {c.name}") for c in (*lab.public_cases, *lab.hidden_cases)]
    found += [(str(v), f"the timed size {k} = {v}") for k, v in lab.timing_sizes.items()]
    return found


def problems(lab: Lab) -> list[str]:
    """What the lab's README fails to state, as sentences; none when it states it all."""
    path = lab.template_home / README
    if not path.is_file():
        return [f"There is no {path}: `grader new-lab` writes one to start from."]
    text = " ".join(path.read_text(encoding="utf-8").split())
    return [
        f"{path} does not state {what}: it must hold {phrase!r}."
        for phrase, what in statements(lab)
        if phrase not in text
    ]


def skeleton(lab: Lab, name: str) -> str:
    """A README for a lab named `name` defined as `lab` is, stating all it must, with the
    prose left to write (each such place says TODO)."""
    s = lab.scoring
    public = ", ".join(f"`{c.name}`" for c in lab.public_cases)
    fixed = ", ".join(f"`{c.name}`" for c in lab.hidden_cases) or "none"
    hidden = cases.hidden_count(lab)
    timed = ", ".join(f"{k} = {v}" for k, v in lab.timing_sizes.items())
    signatures = "\n".join(k.signature() for k in lab.kernels)
    block = "x".join(str(v) for v in lab.default_block)
    return f"""# Lab `{name}`: {lab.title}

TODO: what the student writes, and what the lab teaches.

Start from `kernel.cu` in this folder: it compiles and runs, and its `TODO` comments walk
you through the lab.

## What the kernel computes

{lab.summary}

TODO: the arrays, their shapes and element types, and the formula of each output.

## What the grader expects

Your file defines {"these kernels" if len(lab.kernels) > 1 else "this kernel"}, with
exactly these names, parameter orders and parameter types:

```cuda
{signatures}
```

Your file holds only the kernels and their helpers: no `main()`, no host code, and no
CUDA libraries. The grader allocates the buffers and launches the kernels itself.

## How your kernel is launched

The grader launches BLOCK_X x BLOCK_Y x BLOCK_Z threads per block (default {block}), over
ceil(extent / TILE) blocks on each axis; your file may `#define` these macros.

TODO: what one block covers here.

## Sizes change: hard-code nothing

The {len(lab.public_cases)} public cases ({public}) are the ones you can run yourself.
Your instructor also runs {hidden} hidden cases, derived from a secret: the fixed ones
{fixed}, and {lab.random_cases} with random sizes.

Speed is measured at {timed}.

## Check your work

```
grader check {name} kernel.cu
grader template {name} my-{name}
```

## How it is scored

| part | points | how |
|---|---|---|
| public cases | {s.public:g} | shared equally by the {len(lab.public_cases)} public cases |
| hidden cases | {s.hidden:g} | shared equally by the {hidden} hidden cases (staff run them) |
| speed | {s.performance:g} | on a GPU only, and only when every case passed |

The speedup is the reference's time divided by yours. A speedup of {s.target_speedup:g} or
more earns all {s.performance:g} speed points and {s.zero_speedup:g} or less earns none; in
between the points grow with the logarithm of the speedup.

## Classic bugs

TODO: the mistakes the hints name.
"""


def write_skeleton(lab: Lab, name: str, folder: Path) -> Path:
    """Write the skeleton README into `folder`, replacing the one there."""
    path = folder / README
    path.write_text(skeleton(lab, name), encoding="utf-8")
    return path
