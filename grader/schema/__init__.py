"""The JSON schemas of what the grader writes for programs to read, and their versions.

Each schema file states its version as the `const` of its `schema_version` property, and
the documents it describes carry that number, so a consumer can tell versions apart before
it reads anything else. Every change to a schema file comes with a new version:
versions.json records the SHA-256 of each version of each file, and a test fails when a
file's bytes are not those its version recorded."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).parent
REPORT = "report.schema.json"  # grader check --json, and each report.json of a batch
LABS = "labs.schema.json"  # grader labs --json
GRADESCOPE_EXTRA = "gradescope-extra.schema.json"  # extra_data of Gradescope's results.json
VERSIONS = "versions.json"


@cache
def load(name: str) -> dict:
    """The schema file `name` of this folder, parsed."""
    return json.loads((FOLDER / name).read_text(encoding="utf-8"))


def version(name: str) -> int:
    """The version the schema file `name` declares."""
    return load(name)["properties"]["schema_version"]["const"]
