"""The verbs for course staff: batch, merge, similar, gradescope and init-ci. Domain errors travel
up to grader.cli.main, which prints their sentence."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from grader import defaults, labs, machine
from grader.cli.args import (
    add_case_timeout,
    add_lab,
    add_profile,
    add_submission_timeout,
    painter,
    positive_int,
    secret,
)
from grader.cli.outputs import check_out_folder
from grader.cli.trust import Graded
from grader.defaults import SECRET_ENV
from grader.errors import ExitCode

# -- batch ------------------------------------------------------------------------------


def run_batch(args: argparse.Namespace) -> int:
    from grader.batch import parse_shard
    from grader.batch import run_batch as grade_course
    from grader.course.gpus import parse_gpus, require_gpus

    out = check_out_folder(args.out, [Path(args.dir)])
    shard = parse_shard(args.shard) if args.shard else None
    gpus = parse_gpus(args.gpus)
    if args.slurm:
        if args.backend == "cpu":
            require_gpus(gpus, "cpu")  # GPUs of the cluster's nodes are not this machine's
        return _write_slurm(args, shard, gpus)
    require_gpus(gpus, args.backend)
    report = grade_course(
        args.lab,
        Path(args.dir),
        out,
        secret=secret(args),
        jobs=args.jobs or machine.slots(defaults.SUBMISSION_MEMORY),
        gpus=gpus,
        timeout=args.timeout,
        submission_timeout=args.submission_timeout,
        backend=args.backend,
        shard=shard,
        log=sys.stderr,
        regrade=args.regrade,
        public_only=args.public_only,
        profile=args.profile,
    )
    out, counts, paint = report.out, report.counts, painter(args)
    print(
        f"{counts.submissions} submissions ({report.layout} layout"
        f"{f', shard {shard}' if shard else ''}): {paint(f'{counts.passed} passed', 'green')}, "
        f"{paint(f'{counts.failed} failed', 'red')}, "
        f"{paint(f'{counts.compile_errors} did not compile', 'yellow')}, "
        f"{paint(f'{counts.errors} could not be graded', 'magenta')}."
    )
    print(
        f"This run graded {report.graded}, kept {report.reused} graded before"
        + (
            f", and found no one .cu file to grade in {report.unsourced} (each one's row says why)."
            if report.unsourced
            else "."
        )
    )
    if report.ignored:
        from grader.report.common import printable  # the names are the students' choosing

        print(f"Not submissions, left alone: {printable(', '.join(report.ignored))}")
    print(f"Gradebook: {out / 'gradebook.csv'}\nSummary:   {out / 'summary.html'}")
    if report.public_only:  # said at the start too, and in the summary and the gradebook
        print(paint(report.public_only, "bold"))
    return ExitCode.FAILED if counts.errors else ExitCode.OK  # a verdict for everyone, or not


def _write_slurm(args: argparse.Namespace, shard, gpus: list[int]) -> int:
    from grader.batch.slurm import write_slurm_script

    script = write_slurm_script(
        args.lab,
        Path(args.dir),
        Path(args.out),
        shard=shard,
        backend="cuda" if args.backend == "auto" else args.backend,
        gpus=0 if args.backend == "cpu" else max(1, len(gpus)),
        timeout=args.timeout,
        submission_timeout=args.submission_timeout,
        public_only=args.public_only,
        profile=args.profile,
    )
    print(f"Wrote {script}. Nothing was graded. To grade, then merge:")
    print(f"  export {SECRET_ENV}=...   # the tasks get it from your environment")
    print(f"  jobid=$(sbatch --parsable {script})")
    shards = script.parent / "shards"
    print(
        f'  sbatch --dependency=afterany:$jobid --wrap "grader merge {shards}/shard-* '
        f'--out {script.parent}"'
    )
    return ExitCode.OK


def run_merge(args: argparse.Namespace) -> int:
    from grader.batch import merge

    shards = [Path(s) for s in args.shards]
    out = check_out_folder(args.out, shards)
    rows = merge(shards, out)
    print(f"Merged {len(args.shards)} shards: {len(rows)} students.")
    print(f"Gradebook: {out / 'gradebook.csv'}\nSummary:   {out / 'summary.html'}")
    return ExitCode.OK


# -- similar ----------------------------------------------------------------------------


def run_similar(args: argparse.Namespace) -> int:
    from grader.batch.similar import run_similar as compare_class
    from grader.report.common import percent, printable  # names are the students' choosing

    folder = Path(args.dir)
    against = Path(args.against) if args.against else None
    inputs = [folder] + ([against] if against else [])
    out = check_out_folder(args.pages, inputs) if args.pages else None
    report = compare_class(args.lab, folder, against=against, threshold=args.threshold, out=out)
    public = f" and {_count(report.public, 'public solution')}" if against else ""
    print(
        f"Compared {_count(report.compared, 'submission')}{public} ({report.lab}): "
        f"{_count(report.found, 'pair')} with {percent(args.threshold)} or more of the smaller "
        "one in common."
    )
    for shown in report.shown:
        pair = shown.pair
        other = f"public solution {pair.second}" if pair.public else pair.second
        print(
            printable(
                f"  {percent(pair.score):>6}  {pair.first}  {other}  ({percent(pair.of_first)} "
                f"of the first, {percent(pair.of_second)} of the second; "
                f"{_count(shown.passages, 'passage')})"
            )
        )
    if report.found > len(report.shown):
        print(f"  and {report.found - len(report.shown)} more: raise --threshold to see fewer.")
    for line in report.skipped:
        print(printable(f"Not compared: {line}"))
    if report.table:
        print(f"Side by side: {report.table}")
    print("Evidence for a person to read, never a grade.")
    return ExitCode.OK


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def share(text: str) -> float:
    """An argument type: a share above 0 and at most 1, as 0.5 or 50%."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a share above 0 and at most 1 (0.5, 50%)"
        )
    return value


def _similar_parser(verbs: argparse._SubParsersAction) -> None:
    similar = verbs.add_parser(
        "similar",
        help="find submissions that share their code",
        description="Compare the submissions in DIR with each other, and with the public "
        "solutions in --against, as MOSS does: names, numbers, comments and layout are set "
        "aside, and so is the lab's template. Lists the pairs with the most code in common; "
        "with --out, writes similar.html and a side-by-side page of each pair. Evidence for "
        "a person to read, never a grade.",
    )
    add_lab(similar)
    similar.add_argument("dir", metavar="DIR", help="the folder of submissions, as for batch")
    similar.add_argument(
        "--against",
        metavar="PUBLIC",
        help="a folder of known public solutions: every .cu and .cuh file in it, at any depth",
    )
    similar.add_argument(
        "--threshold",
        type=share,
        default=defaults.SIMILAR_THRESHOLD,
        metavar="SHARE",
        help="list a pair from this share of the smaller one's code in common "
        f"(default {defaults.SIMILAR_THRESHOLD:g}, or {defaults.SIMILAR_THRESHOLD * 100:.0f}%%)",
    )
    similar.add_argument(
        "--out",
        dest="pages",
        metavar="DIR",
        help="write similar.html and each pair's page, similar/pair-N.html, into this folder",
    )
    similar.set_defaults(run=run_similar, graded=lambda args: Graded.folder(args.dir))


# -- Gradescope and CI ------------------------------------------------------------------


def run_gradescope(args: argparse.Namespace) -> int:
    from grader.gradescope import build_autograder

    key = secret(args)
    path = build_autograder(args.lab, Path(args.out), backend=args.backend, secret=key)
    print(f"Wrote {path}: upload it as the assignment's autograder ({args.backend} backend).")
    if key:
        print("It holds the secret and runs the hidden cases: share it with course staff only.")
    elif left_out := _public_only(args.lab):
        print(f"{left_out} Give --secret or {SECRET_ENV} to run them.")
    return ExitCode.OK


def run_init_ci(args: argparse.Namespace) -> int:
    from grader.ci import init_ci

    written = init_ci(
        args.lab,
        gpu_runner=args.gpu_runner,
        out=Path(args.out),
        force=args.force,
        grader_source=args.grader_source,
        vendor_wheel=args.vendor_wheel,
        runner_is_ephemeral=args.runner_is_ephemeral,
    )
    where = f"the runner labelled {args.gpu_runner}" if args.gpu_runner else "ubuntu-latest"
    print(f"Wrote {written[0]}: on every push it runs `grader check` on {where}.")
    if not any(path.suffix == ".whl" for path in written):
        print("It installs the grader from the pinned source its GRADER_PACKAGE names.")
    for path in written[1:]:
        what = "the grader the workflow installs" if path.suffix == ".whl" else "the lab's own"
        print(f"Wrote {path}: {what}; commit it with the workflow.")
    if left_out := _public_only(args.lab, " there"):
        print(f"{left_out} A student's repository cannot keep a secret.")
    return ExitCode.OK


def _public_only(lab: str, how: str = "") -> str | None:
    """What a grading of `lab` without the secret leaves out (the batch's words), or None
    where the lab has no hidden cases."""
    from grader.course import points

    spec = labs.get(lab)
    return points.public_only(spec, how) if points.hidden_left_out(spec, False) else None


# -- parsing ----------------------------------------------------------------------------


def _batch_parser(verbs: argparse._SubParsersAction) -> None:
    batch = verbs.add_parser(
        "batch",
        help="grade a folder of submissions",
        description="Grade every submission in DIR (each .cu file or subfolder; Gradescope "
        "and GitHub Classroom exports as they are) into OUT: gradebook.csv, summary.html "
        "and a report folder per student. Resumable: run it again to finish or update.",
    )
    add_lab(batch)
    batch.add_argument("dir", metavar="DIR", help="the folder of submissions")
    batch.add_argument(
        "--out", metavar="OUT", help="the folder to grade into (or out in grader.toml)"
    )
    batch.add_argument("--secret", help=f"the course's secret (or set {SECRET_ENV})")
    batch.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="submissions graded at once (default: the CPUs this process may use, fewer "
        "where memory is short)",
    )
    batch.add_argument("--gpus", metavar="0,1", help="GPUs to use; timing runs alone on each")
    add_case_timeout(batch)
    add_submission_timeout(batch)
    batch.add_argument(
        "--backend",
        choices=("auto", "cuda", "cpu"),
        help="as for check: auto (default) grades on the GPU when one is usable",
    )
    batch.add_argument("--shard", metavar="I/N", help="grade only shard I of N")
    batch.add_argument(
        "--public-only",
        action="store_true",
        help="grade without the secret: only public cases run, and every score and max "
        "leaves the hidden cases' points out (the terminal, summary.html and the "
        "gradebook's cases column say so). Without it, a batch with no secret is refused",
    )
    add_profile(batch, "on GPUs")
    batch.add_argument(
        "--regrade",
        action="store_true",
        help="grade into an OUT graded with another secret, grading every submission again",
    )
    batch.add_argument(
        "--slurm",
        action="store_true",
        help="write OUT/grader-batch.sbatch, a Slurm job array of shards, and grade nothing",
    )
    batch.set_defaults(run=run_batch, resumable=True, graded=lambda args: Graded.folder(args.dir))

    merge = verbs.add_parser(
        "merge",
        help="combine the outputs of shards",
        description="Combine the OUT folders of `grader batch --shard` runs into one.",
    )
    merge.add_argument(
        "shards", nargs="+", metavar="OUT_SHARD", help="the --out folder of each shard's batch"
    )
    merge.add_argument(
        "--out", metavar="OUT", help="the folder to merge into (or out in grader.toml)"
    )
    merge.set_defaults(run=run_merge)


def _staff_parsers(verbs: argparse._SubParsersAction) -> None:
    gradescope = verbs.add_parser(
        "gradescope",
        help="build a Gradescope autograder.zip",
        description="Build the autograder.zip of LAB for a Gradescope programming assignment.",
    )
    add_lab(gradescope)
    gradescope.add_argument(
        "--out", default="autograder.zip", metavar="ZIP", help="the zip to write (autograder.zip)"
    )
    gradescope.add_argument(
        "--backend",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu (default: Gradescope has no GPU), or cuda for a GPU image",
    )
    gradescope.add_argument(
        "--secret", help=f"put the secret in the zip to run hidden cases (or {SECRET_ENV})"
    )
    gradescope.set_defaults(run=run_gradescope)

    ci = verbs.add_parser(
        "init-ci",
        help="write a GitHub Actions workflow for student repositories",
        description="Write a GitHub Actions workflow that runs `grader check` on every push "
        "and reports to the run's page and to GitHub Classroom.",
    )
    add_lab(ci)
    ci.add_argument("--gpu-runner", metavar="LABEL", help="run on this GPU runner, cuda backend")
    ci.add_argument(
        "--runner-is-ephemeral",
        action="store_true",
        help="state that the --gpu-runner runs each job in a fresh container with the GPU "
        "and nothing else (no secrets, no network beyond GitHub), as docs/gpu-runner/ "
        "builds; without it --gpu-runner is refused, since each student controls the "
        "workflow and so every command run there",
    )
    ci.add_argument(
        "--out",
        default=".github/workflows/grader.yml",
        metavar="PATH",
        help="the workflow to write, in a repository's .github/workflows/ "
        "(.github/workflows/grader.yml)",
    )
    ci.add_argument("--force", action="store_true", help="overwrite an existing file")
    source = ci.add_mutually_exclusive_group()
    source.add_argument(
        "--grader-source",
        metavar="SPEC",
        help="install the grader from this pip requirement: a git URL pinned to a commit, "
        "or a wheel's URL with #sha256= (default: where this grader was installed from, "
        "when that is such a pin; else a wheel of it written beside the workflow)",
    )
    source.add_argument(
        "--vendor-wheel",
        action="store_true",
        help="commit a wheel of this grader beside the workflow and install that",
    )
    ci.set_defaults(run=run_init_ci)


def add_staff_verbs(verbs: argparse._SubParsersAction) -> None:
    """Add batch, merge, similar, gradescope and init-ci to the `grader` command."""
    _batch_parser(verbs)
    _similar_parser(verbs)
    _staff_parsers(verbs)
