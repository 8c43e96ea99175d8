"""A lab's README (student_template/LAB/README.md), what the student reads: what it must
state, so that it cannot drift from the lab's definition, and the skeleton `grader
new-lab` writes, which states all of it and leaves the prose to the course.

It must state each kernel's signature, every fixed case by name, the count of hidden
cases, the scoring table and speed thresholds, the timed sizes, and the rules that
measure the work (`measured_rules`). Phrases are found
in the README's text with its runs of white space made one space, so lines may wrap
anywhere."""

from __future__ import annotations

import textwrap
from pathlib import Path

from grader.judge import cases, rules
from grader.model.lab import Lab

README = "README.md"
WIDTH = 88  # the READMEs' line length


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
    found += [(rule, "a rule that measures the work") for rule in measured_rules(lab)]
    return found


def measured_rules(lab: Lab) -> list[str]:
    """The rules the grader measures on its profile of the kernel, as the README and the
    template state them (grader.judge.rules.measured decides them)."""
    found = [
        f"No thread may make more than {rules.share(lab.busiest_thread)} of the global loads "
        "of the profile case"
    ]
    if lab.traffic is not None:
        found.append(
            f"Each output element may read at most {rules.share(lab.traffic.fraction)} of the "
            f"global memory the naive kernel reads for it: {lab.traffic.fix}"
        )
    return found


def rules_section(lab: Lab) -> str:
    """The README's section on the rules the grader measures."""
    case = rules.profile_case(lab, list(lab.public_cases))
    items = "\n".join(
        textwrap.fill(f"- {rule}.", WIDTH, subsequent_indent="  ") for rule in measured_rules(lab)
    )
    return f"""## Rules the grader measures

On every machine, the grader runs your kernel on the public case `{case}` (the profile
case) in a model that records the address of every load and store, and measures:

{items}

A kernel that breaks a rule here, or that does not run to its end in the profile case,
gets half the correctness points and no speed points.
"""


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

{rules_section(lab)}
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
