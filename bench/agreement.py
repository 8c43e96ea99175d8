"""Do both backends give every kernel the same grade?

    python3 bench/agreement.py [--backends cpu,cuda] [--labs LAB ...] [--kernels TEXT ...]
                               [--budget S] [--parallel N] [--json PATH] [--resume PATH]

Grades every kernel under the project that fits a lab: each lab's reference, baseline and
variants, the labs' known-wrong kernels, and the course notes' kernels in
tests/data/seeds whose signature is a lab's (renamed to the lab's kernel). Each grading
runs public and hidden cases (a fixed secret) without timing, in its own process, on each
backend that is usable here. Prints one row per kernel: the correctness score on each
backend, the diagnostic kinds each found, and whether the scores are equal; then the
share of kernels with equal scores (target: at least 95%).

A grading that fails or runs too long is a row that says so; the table always ends.
Gradings not started within --budget seconds are listed as skipped. With --resume, the
gradings an earlier run's --json holds are taken as done and not run again, so that runs
cut short by a call's time limit add up to the whole table (the same --json and --resume
path each time: --json is written as each grading ends, so a run killed mid-way keeps
what it graded)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.labs import all_labs, get  # noqa: E402
from grader.model.interface import canonical_ctype  # noqa: E402
from grader.model.lexer import uncommented  # noqa: E402
from grader.validate import wrong_dir  # noqa: E402

SECRET = "agreement-secret"
SEEDS = ROOT / "tests" / "data" / "seeds"
GRADING_LIMIT = 180.0  # seconds one grading may take before it is a row that says so
EQUAL = 1e-6


@dataclass(frozen=True)
class Kernel:
    lab: str
    name: str  # as the table shows it
    path: Path
    rename: str | None = None  # a seed kernel's own name, #defined to the lab's
    escaped: bool = False  # a seed whose || the notes wrote as \|\| (see seeds.json)

    def source(self) -> str:
        text = self.path.read_text()
        if self.escaped:
            text = text.replace("\\|", "|")
        if self.rename is None:
            return text
        return f"#define {self.rename} {all_labs()[self.lab].kernel.name}\n{text}"


@dataclass
class Graded:
    score: float | None = None
    max_score: float | None = None
    kinds: list[str] = field(default_factory=list)
    problem: str = ""  # why there is no score

    def cell(self) -> str:
        if self.score is None:
            return self.problem
        return f"{self.score:.2f}/{self.max_score:g}"


Rows = list[tuple[Kernel, dict[str, Graded]]]  # each kernel, its gradings by backend


# -- which kernels --------------------------------------------------------------------------


def kernels(labs: list[str]) -> Iterator[Kernel]:
    for lab in labs:
        folder = get(lab).home
        for path in [folder / "reference.cu", folder / "baseline.cu"]:
            if path.exists():
                yield Kernel(lab, f"{lab}/{path.name}", path)
        for path in sorted((folder / "variants").glob("*.cu")):
            yield Kernel(lab, f"{lab}/variants/{path.name}", path)
        for path in sorted(wrong_dir(lab).glob("*.cu")):
            yield Kernel(lab, f"{lab}/wrong/{path.name}", path)
    yield from seed_kernels(labs)


def seed_kernels(labs: list[str]) -> Iterator[Kernel]:
    """Each course-notes kernel whose parameter types are a lab's, once per such lab."""
    entries = json.loads((SEEDS / "seeds.json").read_text())["kernels"]
    escaped = {e["file"] for e in entries if e.get("markdown_escapes")}
    for entry in entries:
        path = SEEDS / entry["file"]
        types = _parameter_types(path.read_text(), entry["kernel"])
        for lab in labs:
            spec = all_labs()[lab]
            if types == [canonical_ctype(p.ctype) for p in spec.kernel.params]:
                name = f"{lab}/seed/{entry['file']}:{entry['kernel']}"
                yield Kernel(lab, name, path, entry["kernel"], entry["file"] in escaped)


def _parameter_types(text: str, kernel: str) -> list[str] | None:
    code = uncommented(text).replace("\\|", "|")
    match = re.search(rf"__global__[^;{{]*?\b{re.escape(kernel)}\s*\(([^)]*)\)", code)
    if not match:
        return None
    types = []
    for param in match.group(1).split(","):
        words = re.sub(r"\b[A-Za-z_]\w*\s*$", "", param.strip())  # drop the name
        types.append(canonical_ctype(words))
    return types


# -- grading ------------------------------------------------------------------------------


def grade_one(lab: str, source: Path, backend: str, out: Path, jobs: int) -> None:
    """In a child process: grade and write the JSON report (or a line saying why not)."""
    from grader.errors import GraderError
    from grader.grading.pipeline import Options, check
    from grader.report import json as json_report

    options = Options(backend=backend, secret=SECRET, timing=False, jobs=jobs)
    try:
        result = check(lab, source, options)
    except GraderError as error:
        out.write_text(json.dumps({"problem": str(error)}))
        return
    out.write_text(json_report.render(result))


def staged(kernel: Kernel, folder: Path) -> Path:
    """The kernel's file as graded: its own name (messages quote it), in a folder of its
    own under `folder`."""
    return folder / re.sub(r"\W", "_", kernel.name) / kernel.path.name


def run_grading(kernel: Kernel, backend: str, jobs: int, folder: Path) -> Graded:
    source = staged(kernel, folder)
    out = source.parent / f"{backend}.json"
    cmd = [sys.executable, __file__, "--one", kernel.lab, str(source), backend, str(out)]
    try:
        proc = subprocess.run(
            [*cmd, "--jobs", str(jobs)],
            capture_output=True,
            text=True,
            timeout=GRADING_LIMIT,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return Graded(problem=f"grading took over {GRADING_LIMIT:g} s")
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return Graded(problem=f"no report: {tail[:80]}")
    if "problem" in data:
        return Graded(problem=f"setup: {data['problem'][:80]}")
    found = {d["kind"] for d in data["diagnostics"]}
    found |= {d["kind"] for c in data["cases"] for d in c["diagnostics"]}
    return Graded(data["score"], data["max_score"], sorted(found))


def usable_backends(wanted: list[str]) -> tuple[list[str], list[str]]:
    from grader.backends import gpu_status

    out, notes = [], []
    for backend in wanted:
        if backend == "cuda":
            usable, why = gpu_status()
            if not usable:
                notes.append(f"cuda column left out: {why}")
                continue
        out.append(backend)
    return out, notes


# -- the table ------------------------------------------------------------------------------


def table(rows: Rows, backends: list[str]) -> list[str]:
    header = ["kernel", *(f"{b} score" for b in backends)]
    header += [*(f"{b} kinds" for b in backends), "equal"]
    lines = [header]
    for kernel, graded in rows:
        cells = [kernel.name]
        cells += [graded[b].cell() if b in graded else "skipped" for b in backends]
        cells += [",".join(graded[b].kinds) if b in graded else "" for b in backends]
        cells.append(_equal_mark(graded, backends))
        lines.append(cells)
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines]


def _equal(graded: dict[str, Graded], backends: list[str]) -> bool | None:
    scores = [graded[b].score if b in graded else None for b in backends]
    if len(backends) < 2 or any(s is None for s in scores):
        return None
    return abs(scores[0] - scores[1]) < EQUAL


def _equal_mark(graded: dict[str, Graded], backends: list[str]) -> str:
    same = _equal(graded, backends)
    return "-" if same is None else ("yes" if same else "NO")


def earlier(path: Path | None) -> dict[tuple[str, str], Graded]:
    """The gradings an earlier run wrote to `path` (--json), where there is one."""
    if path is None or not path.exists():
        return {}
    done = {}
    for row in json.loads(path.read_text()):
        for backend, graded in row.items():
            if backend != "kernel":
                done[(row["kernel"], backend)] = Graded(**graded)
    return done


def rows_of(chosen: list[Kernel], backends: list[str], results: dict) -> Rows:
    """Each kernel with its gradings so far, by backend."""
    return [
        (k, {b: results[(k.name, b)] for b in backends if (k.name, b) in results}) for k in chosen
    ]


def save(path: Path | None, chosen: list[Kernel], backends: list[str], results: dict) -> None:
    """The rows graded so far, as JSON (--json), replaced whole: a run cut short keeps
    what it graded, for --resume."""
    if path is None:
        return
    data = [
        {"kernel": k.name, **{b: vars(g) for b, g in graded.items()}}
        for k, graded in rows_of(chosen, backends, results)
    ]
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1))
    partial.replace(path)


def grade_all(
    chosen: list[Kernel],
    backends: list[str],
    parallel: int,
    jobs: int,
    budget: float,
    done: dict[tuple[str, str], Graded],
    keep: Path | None = None,
) -> dict[tuple[str, str], Graded]:
    """Every (kernel, backend) grading not `done`, started within `budget` seconds,
    `parallel` at a time, each printed to stderr and saved to `keep` as it ends; with
    those done."""
    started = time.monotonic()
    results: dict[tuple[str, str], Graded] = dict(done)
    total = len(chosen) * len(backends)
    saving = threading.Lock()
    with (
        tempfile.TemporaryDirectory(prefix="agreement-") as tmp,
        ThreadPoolExecutor(parallel) as pool,
    ):

        def task(kernel: Kernel, backend: str) -> None:
            begun = time.monotonic()
            if begun - started > budget:
                return
            try:
                graded = run_grading(kernel, backend, jobs, Path(tmp))
            except Exception as error:  # one kernel's failure never stops the table
                graded = Graded(problem=f"bench error: {error}"[:80])
            with saving:
                results[(kernel.name, backend)] = graded
                save(keep, chosen, backends, results)
            took = time.monotonic() - begun
            print(
                f"[{len(results)}/{total}] {kernel.name} {backend}: {graded.cell()} ({took:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

        for kernel in chosen:
            staged(kernel, Path(tmp)).parent.mkdir()
            staged(kernel, Path(tmp)).write_text(kernel.source())
        # the slowest backend's gradings first, so both columns fill in evenly
        for kernel in chosen:
            for backend in reversed(backends):
                if (kernel.name, backend) not in done:
                    pool.submit(task, kernel, backend)
    return results


def summary(rows: Rows, backends: list[str]) -> list[str]:
    compared = [_equal(g, backends) for _, g in rows if _equal(g, backends) is not None]
    skipped = sum(1 for _, g in rows for b in backends if b not in g)
    if compared:
        same = sum(compared)
        share = (
            f"equal scores: {same} of {len(compared)} kernels graded on both backends "
            f"({100.0 * same / len(compared):.1f}%; target >= 95%)"
        )
    else:
        share = "equal scores: not measured (needs two backends that graded the same kernel)"
    return ["", share, f"{len(rows)} kernels, {skipped} gradings skipped by the budget"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="cpu,cuda", help="comma-separated (default both)")
    parser.add_argument("--labs", nargs="*", help="only these labs")
    parser.add_argument("--kernels", nargs="*", help="only kernels whose name holds one of these")
    parser.add_argument("--budget", type=float, default=220.0, help="seconds to start gradings")
    parser.add_argument("--parallel", type=int, default=0, help="gradings at once (default: auto)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this path")
    parser.add_argument("--resume", type=Path, help="an earlier --json: its gradings are done")
    parser.add_argument("--one", nargs=4, metavar=("LAB", "FILE", "BACKEND", "OUT"))
    parser.add_argument("--jobs", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        lab, source, backend, out = args.one
        grade_one(lab, Path(source), backend, Path(out), args.jobs or None)
        return 0

    labs = sorted(all_labs()) if not args.labs else [lab for lab in args.labs if lab in all_labs()]
    chosen = [
        k for k in kernels(labs) if not args.kernels or any(t in k.name for t in args.kernels)
    ]
    backends, notes = usable_backends(args.backends.split(","))
    cores = os.cpu_count() or 1
    parallel = args.parallel or max(1, min(6, cores // 3))
    jobs = max(1, cores // parallel)
    print(
        f"{len(chosen)} kernels, backends {', '.join(backends) or 'none'}, {parallel} gradings "
        f"at once, {jobs} CPU threads each, secret {SECRET!r}, no timing",
        flush=True,
    )
    for note in notes:
        print(f"note: {note}", flush=True)
    started = time.monotonic()
    done = earlier(args.resume)
    if done:
        print(f"{len(done)} gradings done already ({args.resume})", flush=True)
    results = grade_all(chosen, backends, parallel, jobs, args.budget, done, args.json)
    rows = rows_of(chosen, backends, results)
    print("\n".join([*table(rows, backends), *summary(rows, backends)]))
    print(f"{time.monotonic() - started:.0f} s")
    save(args.json, chosen, backends, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
