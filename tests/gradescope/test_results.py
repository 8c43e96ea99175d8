"""Gradescope: results.json against a JSON Schema written from Gradescope's documentation,
and the autograder zip's layout. The end-to-end run of run_autograder is in
test_gradescope_run.py."""

from __future__ import annotations

import json
import stat
import zipfile
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import jsonschema
import profile_kit
import pytest
from batch_data import make_result

from grader import labs
from grader.course.points import Part
from grader.gradescope import build_autograder
from grader.gradescope.results import maxima, results_json
from grader.model.result import Diagnostic, Kind, Status

SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text())
SECRET = "course-secret"


def validate(data: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(data)


def test_the_schema_rejects_what_the_documentation_does_not_allow():
    with pytest.raises(jsonschema.ValidationError):
        validate({"tests": [{"name": "no score anywhere"}]})
    with pytest.raises(jsonschema.ValidationError):
        validate({"score": 1, "tests": [{"score": 1, "visibility": "later"}]})
    with pytest.raises(jsonschema.ValidationError):
        validate({"score": 1, "execution_time": "12 s"})
    validate({"tests": [{"score": 1, "max_score": 1}], "leaderboard": [{"name": "x", "value": 1}]})


def test_one_test_per_case_hidden_ones_after_the_due_date():
    lab = labs.get("matmul-tiled")
    result = make_result("matmul-tiled", ("width-517",), SECRET, speedup=1.3)
    data = results_json(lab, result, SECRET, 1.25)
    validate(data)
    tests = data["tests"]
    assert tests[0]["name"] == "Compile" and "score" not in tests[0]
    assert tests[0]["status"] == "passed" and tests[0]["visibility"] == "visible"
    cases = [t for t in tests if " case " in t["name"]]
    assert len(cases) == len(result.cases)
    hidden = [t for t in cases if t["name"].startswith("hidden")]
    assert hidden and all(t["visibility"] == "after_due_date" for t in hidden)
    assert all(t["visibility"] == "visible" for t in cases if t["name"].startswith("public"))
    failed = next(t for t in cases if t["name"] == "hidden case width-517")
    assert failed["status"] == "failed" and failed["score"] == 0
    assert "Only the last partial tile" in failed["output"]
    assert tests[-1]["name"] == "Speed"
    assert sum(t.get("score", 0) for t in tests) == pytest.approx(data["score"], abs=1e-3)
    assert data["score"] == pytest.approx(result.score)
    # speed waits on every case, hidden ones too: it is hidden with them, with no leaderboard
    assert "leaderboard" not in data and tests[-1]["visibility"] == "after_due_date"
    alone = results_json(lab, make_result("matmul-tiled", (), None, speedup=1.3), None, 1.25)
    assert alone["leaderboard"] == [{"name": "Speedup", "value": 1.3, "order": "desc"}]
    assert isinstance(data["execution_time"], float)


def test_on_the_cpu_there_is_no_leaderboard_and_hidden_can_be_hidden():
    lab = labs.get("conv2d")
    result = make_result("conv2d", (), SECRET)
    data = results_json(lab, result, SECRET, 1.25, hidden_visibility="hidden")
    validate(data)
    assert "leaderboard" not in data
    assert not any(t["name"] == "Speed" for t in data["tests"])
    assert {t["visibility"] for t in data["tests"] if t["name"].startswith("hidden")} == {"hidden"}


def test_a_submission_stopped_before_its_cases_still_lists_every_case():
    lab = labs.get("matmul-naive")
    result = make_result("matmul-naive")
    result.cases, result.status, result.score = [], Status.ERROR, 0.0
    result.compile.ok = False
    result.diagnostics = [Diagnostic(Kind.REQUIREMENT, "Remove main().", line=3)]
    data = results_json(lab, result, None, 0.5)
    validate(data)
    assert data["tests"][0]["status"] == "failed"
    assert "Remove main()" in data["tests"][0]["output"]
    cases = [t for t in data["tests"] if " case " in t["name"]]
    assert len(cases) == len(lab.public_cases)
    assert all(t["score"] == 0 and "Remove main()" in t["output"] for t in cases)


def test_the_zip_has_its_scripts_at_the_root(tmp_path, grader_wheel):
    path = build_autograder(
        "matmul-naive", tmp_path / "autograder.zip", secret=SECRET, wheel=grader_wheel
    )
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        infos = {i.filename: i for i in archive.infolist()}
        config = json.loads(archive.read("config.json"))
        requirements = archive.read("requirements.txt").decode().split()
        secret = archive.read("secret").decode()
    for script in ("setup.sh", "run_autograder"):
        assert script in names
        assert stat.S_IMODE(infos[script].external_attr >> 16) == 0o755
    assert f"wheel/{grader_wheel.name}" in names
    assert archive_bytes(path, f"wheel/{grader_wheel.name}") == grader_wheel.read_bytes()
    assert not any(n.startswith("grader/") or "__pycache__" in n for n in names)
    assert config["lab"] == "matmul-naive" and config["backend"] == "cpu"
    assert any(r.startswith("numpy") for r in requirements)
    assert not any(r.startswith("pycuda") for r in requirements)
    assert secret == SECRET
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the secret


def archive_bytes(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


def test_the_same_inputs_build_the_same_zip(tmp_path, grader_wheel):
    one = build_autograder("conv2d", tmp_path / "one.zip", wheel=grader_wheel)
    two = build_autograder("conv2d", tmp_path / "two.zip", wheel=grader_wheel)
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as archive:
        assert "secret" not in archive.namelist()


def test_a_cuda_zip_installs_pycuda(tmp_path, grader_wheel):
    path = build_autograder(
        "matmul-tiled", tmp_path / "gpu.zip", backend="cuda", wheel=grader_wheel
    )
    assert "pycuda" in archive_bytes(path, "requirements.txt").decode()


@pytest.mark.parametrize("lab_name", sorted(labs.all_labs()))
@pytest.mark.parametrize("secret", [None, SECRET])
def test_the_tests_maxima_add_up_exactly_to_the_labs_points(lab_name, secret):
    lab = labs.get(lab_name)
    for speedup in (None, 1.2):
        result = make_result(lab_name, secret=secret, speedup=speedup)
        data = results_json(lab, result, secret, 1.0)
        tops = [Decimal(str(t["max_score"])) for t in data["tests"] if "max_score" in t]
        want = lab.scoring.public + (lab.scoring.hidden if secret else 0)
        want += lab.scoring.performance if speedup else 0
        assert sum(tops) == Decimal(str(want))
        assert sum(Decimal(str(t.get("score", 0))) for t in data["tests"]) == Decimal(str(want))


def test_maxima_are_apportioned_by_largest_remainder():
    parts = [Part(f"public/{i}", 0.0, 3 / 7) for i in range(7)]
    assert maxima(parts) == [0.4286] * 5 + [0.4285] * 2  # 2.143 + 0.857
    assert maxima([Part("speed", 0.0, 3.0)]) == [3.0]


def test_full_speed_points_score_exactly_the_speed_tests_rounded_maximum():
    # 1.00006 points of speed lose their last unit to the larger remainders of three
    # public cases of 0.99998: the Speed test's maximum is 1.0, and so is full marks
    lab = labs.get("matmul-naive")
    lab = replace(lab, scoring=replace(lab.scoring, public=2.99994, performance=1.00006))
    result = make_result("matmul-naive", speedup=2.0)
    result.performance = replace(result.performance, score=lab.scoring.performance)
    result.score = result.max_score = lab.scoring.public + lab.scoring.performance
    data = results_json(lab, result, None, 1.0)
    validate(data)
    assert [t["max_score"] for t in data["tests"][1:]] == [1.0] * 4
    assert all(t["score"] == t["max_score"] for t in data["tests"][1:])


def test_why_this_speed_is_a_visible_test_worth_nothing():
    lab = labs.get("matmul-naive")
    report = profile_kit.report(profile_kit.rows_from_x(), profile_kit.naive())
    result = replace(make_result("matmul-naive", (), SECRET), profile=report)
    data = results_json(lab, result, SECRET, 1.25, hidden_visibility="hidden")
    validate(data)
    why = next(t for t in data["tests"] if t["name"] == "Why this speed")
    assert why["visibility"] == "visible" and "score" not in why and "max_score" not in why
    assert why["output"].startswith("Why this speed: case width-64 (Width=64), measured by")
    assert "Global loads and stores are uncoalesced: loads 8.5 sectors per request" in why["output"]
    assert sum(t.get("score", 0) for t in data["tests"]) == pytest.approx(data["score"], abs=1e-3)
    plain = results_json(lab, make_result("matmul-naive", (), SECRET), SECRET, 1.25)
    assert not any(t["name"] == "Why this speed" for t in plain["tests"])


@pytest.mark.parametrize("hidden", ["after_due_date", "hidden", "after_published"])
def test_why_this_speed_at_a_hidden_case_is_shown_as_the_hidden_cases_are(hidden):
    """Its measures would tell the hidden profile case's size: a naive matmul's bytes per
    output element are 8 * Width + 4."""
    lab = labs.get("matmul-tiled")
    at_hidden = [
        replace(p, case="a hidden case", sizes={})
        for p in (profile_kit.naive(), profile_kit.tiled_reference())
    ]
    result = replace(
        make_result("matmul-tiled", (), SECRET), profile=profile_kit.report(*at_hidden)
    )
    data = results_json(lab, result, SECRET, 1.25, hidden_visibility=hidden)
    validate(data)
    why = next(t for t in data["tests"] if t["name"] == "Why this speed")
    assert why["visibility"] == hidden
    assert why["output"].startswith("Why this speed: a hidden case, measured by")


def test_the_roofline_goes_with_the_speed_which_waits_on_the_hidden_cases():
    lab = labs.get("matmul-tiled")
    report = profile_kit.report(
        profile_kit.tile_read_down_column(), profile_kit.tiled_reference(), profile_kit.roofline()
    )
    result = replace(make_result("matmul-tiled", (), SECRET, speedup=0.2), profile=report)
    data = results_json(lab, result, SECRET, 1.25)
    validate(data)
    speed = next(t for t in data["tests"] if t["name"] == "Speed")
    why = next(t for t in data["tests"] if t["name"] == "Why this speed")
    assert "Roofline: yours 800 GFLOP/s" in speed["output"]
    assert speed["visibility"] == "after_due_date"
    assert "Roofline" not in why["output"] and "bank conflicts" in why["output"]


def _broken(where: str) -> Diagnostic:
    return Diagnostic(Kind.REQUIREMENT, f"One thread made more than 1/8 of the loads {where}.")


def test_a_rule_broken_at_a_hidden_case_waits_with_the_hidden_cases():
    """Its finding and its cost form a hidden test; the compile test, the public cases and
    the text above them show what they would with the rule kept."""
    lab = labs.get("reduction")
    result = make_result("reduction", (), SECRET, rule_broken=True)
    result = replace(result, diagnostics=[_broken("in a hidden case")])
    data = results_json(lab, result, SECRET, 1.0)
    validate(data)
    visible = [t for t in data["tests"] if t["visibility"] == "visible"]
    assert "1/8" not in json.dumps(visible) + data["output"]
    assert all(t["score"] == t["max_score"] for t in visible if "score" in t)
    held = data["tests"][-1]
    assert held["name"] == "Rules measured at a hidden case" and "1/8" in held["output"]
    assert held["visibility"] == "after_due_date" and held["score"] == pytest.approx(-3.5)
    assert sum(t.get("score", 0) for t in data["tests"]) == pytest.approx(data["score"])
    assert data["score"] == pytest.approx(result.score) == pytest.approx(3.5)


def test_a_rule_broken_at_a_public_case_halves_the_points_in_sight():
    """Broken where the student can run it (without the secret, the public profile case),
    it hides nothing: the public cases show their halved points at once."""
    lab = labs.get("reduction")
    result = make_result("reduction", (), SECRET, rule_broken=True)
    result = replace(result, diagnostics=[_broken("in case n-100000")])
    data = results_json(lab, result, SECRET, 1.0)
    assert "Rules measured at a hidden case" not in [t["name"] for t in data["tests"]]
    public = [t for t in data["tests"] if t["name"].startswith("public case ")]
    assert all(t["score"] == pytest.approx(t["max_score"] / 2, abs=1e-4) for t in public)
    assert "n-100000" in data["tests"][0]["output"]
