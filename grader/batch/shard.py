"""Grading a course on several machines: `--shard I/N` takes a deterministic slice of the
submissions, and `merge` puts the shards' OUT folders back together.

A student belongs to shard I of N when a SHA-256 of their id, taken modulo N, is I-1: the
same on every machine and in every Python, and independent of which other students are
in the folder, so a late submission lands in the same shard as it would have at first."""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.batch import outputs
from grader.batch.gradebook import Row
from grader.batch.outputs import Manifest
from grader.batch.state import STUDENTS, student_dir
from grader.errors import UsageError


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, student: str) -> bool:
        digest = hashlib.sha256(student.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


def parse_shard(text: str) -> Shard:
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(
            f"--shard takes I/N with 1 <= I <= N (shard I of N), not {text!r}; "
            "for example --shard 2/8."
        )
    return Shard(int(match.group(1)), int(match.group(2)))


def _same_course(manifests: list[tuple[Path, Manifest]]) -> None:
    first_path, first = manifests[0]
    for path, manifest in manifests[1:]:
        if manifest.settings != first.settings:
            mine, theirs = manifest.settings, first.settings
            differ = [k for k in vars(mine) if getattr(mine, k) != getattr(theirs, k)]
            raise UsageError(
                f"{path} and {first_path} were graded differently ({', '.join(differ)}); "
                "merge only shards of one batch."
            )


def _complete(manifests: list[tuple[Path, Manifest]]) -> list[str]:
    specs = []
    for path, manifest in manifests:
        if manifest.shard is None:
            raise UsageError(f"{path} is not a shard (it was graded without --shard).")
        specs.append(parse_shard(manifest.shard))
    counts = {s.count for s in specs}
    if len(counts) != 1:
        raise UsageError("The folders are shards of different splits (I/N with different N).")
    count = counts.pop()
    given = [s.index for s in specs]
    repeated = sorted({i for i in given if given.count(i) > 1})
    if repeated:
        raise UsageError(f"Shard {repeated[0]}/{count} is given twice.")
    missing = sorted(set(range(1, count + 1)) - set(given))
    if missing:
        raise UsageError(
            f"Shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
            f"{'are' if len(missing) > 1 else 'is'} missing; merge all {count} shards."
        )
    return [str(s) for s in sorted(specs, key=lambda s: s.index)]


def merge(shards: list[Path], out: Path) -> list[Row]:
    """Combine shard OUT folders into `out`: every student's folder, one gradebook and one
    summary. Refuses shards of different batches, missing or repeated shards, and a
    student found in two shards. Returns the gradebook's rows."""
    shards = [Path(s) for s in shards]
    out = Path(out)
    if not shards:
        raise UsageError("Give the shards' output folders to merge.")
    if any(s.resolve() == out.resolve() for s in shards):
        raise UsageError(f"{out} is one of the shards; merge into a new folder.")
    manifests = [(s, outputs.read_manifest(s)) for s in shards]
    _same_course(manifests)
    names = _complete(manifests)
    owner: dict[str, Path] = {}
    for path, manifest in manifests:
        for student in manifest.students:
            if student in owner:
                raise UsageError(f"Student {student} is in both {owner[student]} and {path}.")
            owner[student] = path
    (out / STUDENTS).mkdir(parents=True, exist_ok=True)
    for student, path in sorted(owner.items()):
        outputs.graded(path, student)  # refuses an incomplete folder before copying it
        target = student_dir(out, student)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(student_dir(path, student), target)
    first = manifests[0][1]
    merged = Manifest(
        settings=first.settings,
        students=sorted(owner),
        shards=names,
        layout=first.layout,
        ignored=sorted({name for _, m in manifests for name in m.ignored}),
    )
    return outputs.write_course_files(out, merged)
