"""Machine output carries its schema's version: the JSON report, `grader labs --json` and
the extra data of Gradescope's results.json each validate against a schema file whose
version they state, and a schema cannot change without a new version (versions.json
records the SHA-256 of each version of each schema)."""

from __future__ import annotations

import hashlib
import json

import jsonschema
import pytest

from grader import cli, schema
from grader.labs import all_labs
from grader.model.result import CompileInfo, Result, Status
from grader.report import json as json_report

SCHEMAS = (schema.REPORT, schema.LABS, schema.GRADESCOPE_EXTRA)


def fingerprint(name: str) -> str:
    """The SHA-256 of the schema's content, whatever its layout (spaces, key order)."""
    text = json.dumps(schema.load(name), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def recorded() -> dict[str, dict[str, str]]:
    return json.loads((schema.FOLDER / schema.VERSIONS).read_text())


@pytest.mark.parametrize("name", SCHEMAS)
def test_a_schema_changes_only_with_a_new_version(name):
    versions = recorded()[name]
    current = str(schema.version(name))
    assert current in versions, f"record version {current} of {name} in versions.json"
    assert versions[current] == fingerprint(name), (
        f"{name} changed but its schema_version is still {current}: give it version "
        f"{max(map(int, versions)) + 1} and record {fingerprint(name)} for it in versions.json"
    )
    assert int(current) == max(map(int, versions)), "the newest recorded version is current"
    assert len(set(versions.values())) == len(versions), "each version is another schema"


def test_a_changed_schema_would_fail_that_test(monkeypatch):
    """The test above can fail: one more enum value is another fingerprint."""
    spoiled = json.loads(json.dumps(schema.load(schema.REPORT)))
    spoiled["properties"]["backend"]["enum"].append("opencl")
    monkeypatch.setattr(schema, "load", lambda name: spoiled)
    assert fingerprint(schema.REPORT) != recorded()[schema.REPORT]["1"]


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_schema_is_valid_and_names_its_version(name):
    jsonschema.Draft202012Validator.check_schema(schema.load(name))
    assert "schema_version" in schema.load(name)["required"]
    assert isinstance(schema.version(name), int)


def _result() -> Result:
    return Result(
        lab="matmul-naive", submission="k.cu", backend="cpu", device="cpu", status=Status.ERROR,
        score=0.0, max_score=3.0, compile=CompileInfo(ok=False, log="x"),
    )  # fmt: skip


def test_the_report_states_its_version_and_refuses_another(tmp_path):
    data = json_report.to_dict(_result())
    assert next(iter(data)) == "schema_version" and data["schema_version"] == 5
    jsonschema.validate(data, schema.load(schema.REPORT))
    for other in (1, 2, 3, 4, None):
        data["schema_version"] = other
        with pytest.raises(json_report.ReportFormatError, match="schema version 5"):
            json_report.result_from_json({k: v for k, v in data.items() if v is not None})


def test_labs_json_lists_every_lab_under_its_schema(capsys):
    assert cli.main(["labs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, schema.load(schema.LABS))
    assert data["schema_version"] == schema.version(schema.LABS)
    assert [lab["name"] for lab in data["labs"]] == list(all_labs())
    naive = next(lab for lab in data["labs"] if lab["name"] == "matmul-naive")
    assert naive["signatures"] == [
        "__global__ void matmul(const float* M, const float* N, float* P, int Width)"
    ]


def test_gradescope_extra_data_states_its_version():
    from grader.gradescope.results import results_json

    lab = all_labs()["matmul-naive"]
    extra = results_json(lab, _result(), None, 1.0)["extra_data"]
    jsonschema.validate(extra, schema.load(schema.GRADESCOPE_EXTRA))
    assert extra["schema_version"] == schema.version(schema.GRADESCOPE_EXTRA)
