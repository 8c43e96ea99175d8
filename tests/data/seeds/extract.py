"""Rebuilds the seed .cu files of this folder from the course notes.

Every `__global__` kernel of the notes (/work/shared/seeds/*.txt, or the folder named by
GRADER_SEEDS_DIR) is copied byte for byte between two marker comments, after the
#defines and `__constant__` declarations its program in the notes has. seeds.json says
where each kernel comes from and how tests/cpu/test_seeds.py launches it.

    python3 tests/data/seeds/extract.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).parent
NOTES = Path(os.environ.get("GRADER_SEEDS_DIR", "/work/shared/seeds"))
BEGIN = "// ---- begin {kernel}: {notes} lines {first}-{last}, verbatim ----"
END = "// ---- end {kernel} ----"


def kernel_text(notes: str, first: int, last: int) -> str:
    lines = (NOTES / notes).read_text().split("\n")
    return "\n".join(lines[first - 1 : last])


def main() -> None:
    manifest = json.loads((HERE / "seeds.json").read_text())
    for name, header in manifest["files"].items():
        parts = [header.rstrip("\n"), ""]
        for entry in manifest["kernels"]:
            if entry["file"] != name:
                continue
            first, last = entry["lines"]
            marks = {
                "kernel": entry["kernel"],
                "notes": entry["notes"],
                "first": first,
                "last": last,
            }
            parts += [BEGIN.format(**marks), kernel_text(entry["notes"], first, last)]
            parts += [END.format(**marks), ""]
        (HERE / name).write_text("\n".join(parts))


if __name__ == "__main__":
    main()
