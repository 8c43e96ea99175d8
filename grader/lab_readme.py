"""A lab's README (student_template/LAB/README.md), what the student reads: what it must
state, so that it cannot drift from the lab's definition; the skeleton `grader new-lab`
writes, which states all of it and leaves the prose to the course; and `grader
lab-readme LAB`, which rewrites the sections that state it from the definition.

It must state each kernel's signature, every fixed case by name, the count of hidden
cases, the scoring table and speed thresholds, the timed sizes, and the rules that
measure the work (`measured_rules`). Phrases are found
in the README's text with its runs of white space made one space, so lines may wrap
anywhere. The generated sections (signatures, cases, scoring) lie between HTML comments
that Markdown does not show, and only they are rewritten."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
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
        "and atomics of the profile case (of the lab reference's there, where the kernel "
        "makes more)"
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

Graded with the course's hidden cases, the profile case is one of the hidden cases of
about that size instead, drawn for each submission: a kernel meets these rules at every
size, or it is not known to meet them.

A kernel that breaks a rule here, or that does not run to its end in the profile case,
gets half the correctness points and no speed points.
"""


def problems(lab: Lab) -> list[str]:
    """What the lab's README fails to state, as sentences; none when it states it all."""
    path = lab.template_home / README
    if not path.is_file():
        return [f"There is no {path}: `grader lab-readme {lab.name}` writes one to start from."]
    text = " ".join(path.read_text(encoding="utf-8").split())
    return [
        f"{path} does not state {what}: it must hold {phrase!r} "
        f"(`grader lab-readme {lab.name}` writes it)."
        for phrase, what in statements(lab)
        if phrase not in text
    ]


def sections(lab: Lab) -> dict[str, str]:
    """The README's generated sections, by name: each states from the definition some of
    what it must (statements), so that an author never copies those strings by hand."""
    s, public, hidden = lab.scoring, len(lab.public_cases), cases.hidden_count(lab)
    signatures = "\n".join(k.signature() for k in lab.kernels)
    named = ", ".join(f"`{c.name}`" for c in lab.public_cases)
    fixed = ", ".join(f"`{c.name}`" for c in lab.hidden_cases) or "none"
    timed = ", ".join(f"{k} = {v}" for k, v in lab.timing_sizes.items())
    return {
        "signatures": f"```cuda\n{signatures}\n```",
        "cases": f"""The {public} public cases ({named}) are the ones you can run yourself.
Your instructor also runs {hidden} hidden cases, derived from a secret: the fixed ones
{fixed}, and {lab.random_cases} with random sizes.

Speed is measured at {timed}.""",
        "scoring": f"""| part | points | how |
|---|---|---|
| public cases | {s.public:g} | shared equally by the {public} public cases |
| hidden cases | {s.hidden:g} | shared equally by the {hidden} hidden cases (staff run them) |
| speed | {s.performance:g} | on a GPU only, and only when every case passed |

The speedup is the reference's time divided by yours. A speedup of {s.target_speedup:g} or
more earns all {s.performance:g} speed points and {s.zero_speedup:g} or less earns none; in
between the points grow with the logarithm of the speedup.""",
        "rules": rules_section(lab).rstrip(),
    }


def _begin(section: str) -> str:
    return f"<!-- begin generated {section}: `grader lab-readme` rewrites it from lab.py -->"


def _end(section: str) -> str:
    return f"<!-- end generated {section} -->"


def _block(section: str, text: str) -> str:
    return f"{_begin(section)}\n{text}\n{_end(section)}"


def skeleton(lab: Lab, name: str) -> str:
    """A README for a lab named `name` defined as `lab` is, stating all it must in its
    generated sections, with the prose left to write (each such place says TODO)."""
    made = {key: _block(key, text) for key, text in sections(lab).items()}
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

{made["signatures"]}

Your file holds only the kernels and their helpers: no `main()`, no host code, and no
CUDA libraries. The grader allocates the buffers and launches the kernels itself.

## How your kernel is launched

The grader launches BLOCK_X x BLOCK_Y x BLOCK_Z threads per block (default {block}), over
ceil(extent / TILE) blocks on each axis; your file may `#define` these macros.

TODO: what one block covers here.

## Sizes change: hard-code nothing

{made["cases"]}

{made["rules"]}

## Check your work

```
grader check {name} kernel.cu
grader template {name} my-{name}
```

## How it is scored

{made["scoring"]}

## Classic bugs

TODO: the mistakes the hints name.
"""


def write_skeleton(lab: Lab, name: str, folder: Path) -> Path:
    """Write the skeleton README into `folder`, replacing the one there."""
    path = folder / README
    path.write_text(skeleton(lab, name), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Rewritten:
    """What `rewrite` did to a README: the sections it rewrote and those it added at the
    end, or, where there was none, that it wrote the skeleton."""

    path: Path
    rewritten: list[str]
    added: list[str]
    skeleton: bool = False


def rewrite(lab: Lab) -> Rewritten:
    """Rewrite the generated sections of the lab's README from its definition, leaving
    the prose around them as it is; a section the README does not mark is added at its
    end; a lab without a README gets the skeleton."""
    path = lab.template_home / README
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        return Rewritten(write_skeleton(lab, lab.name, path.parent), [], [], skeleton=True)
    text = path.read_text(encoding="utf-8")
    rewritten, added = [], []
    for section, body in sections(lab).items():
        found = re.search(
            rf"^{re.escape(_begin(section))}\n.*?^{re.escape(_end(section))}$",
            text,
            re.MULTILINE | re.DOTALL,
        )
        if found:
            text = text[: found.start()] + _block(section, body) + text[found.end() :]
            rewritten.append(section)
        else:
            text = f"{text.rstrip()}\n\n{_block(section, body)}\n".lstrip()
            added.append(section)
    path.write_text(text, encoding="utf-8")
    return Rewritten(path, rewritten, added)
