"""A course's own labs: a lab root scaffolded by `grader new-lab`, found through --labs
and GRADER_LABS by every command, graded through the batch's workers, carried by a
student's CI workflow; definitions that fail, roots that clash; `grader validate-lab`."""

from __future__ import annotations

import csv
import importlib
import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest

from grader import cli, lab_readme, labs
from grader.errors import ExitCode

SOURCE = "histogram"  # the quickest lab to grade on the CPU
NAME = "my-histogram"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def only_builtin_roots(monkeypatch):
    """Roots added here (--labs) and GRADER_LABS stay in the test that adds them."""
    monkeypatch.setattr(labs, "_added", [])
    monkeypatch.delenv(labs.ENV, raising=False)


KEPT = "wrong/never_merged.cu"  # the one known-wrong kernel the author asks for


@pytest.fixture
def root(tmp_path, capsys) -> Path:
    """A lab root holding a copy of SOURCE named NAME, made by `grader new-lab`."""
    into = tmp_path / "course-labs"
    argv = ["new-lab", NAME, "--from", SOURCE, "--into", str(into), "--copy", KEPT]
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.OK, err
    assert f"grader validate-lab {NAME} --labs {into}" in out
    home = labs.get(SOURCE).home
    slow = len(list((home / "slow").iterdir()))  # its kernels and EXPECTED.toml
    wrong = len(list((home / "wrong").glob("*.cu"))) - 1  # but KEPT
    listed = f"slow/ ({slow} files), wrong/ ({wrong} files)"
    assert f"Not copied from histogram (name any with --copy): {listed}." in out
    labs._added.clear()  # the command above added nothing, but be sure
    return into


def test_new_lab_writes_a_renamed_copy_ready_to_edit(root):
    definition = root / "reference_kernels" / NAME
    template = root / "student_template" / NAME
    assert sorted(p.name for p in definition.iterdir()) == [
        "baseline.cu",
        "lab.py",
        "reference.cu",
        "wrong",
    ]
    # the one known-wrong kernel asked for, with its entry of EXPECTED.toml alone
    wrong = definition / "wrong"
    assert sorted(p.name for p in wrong.iterdir()) == ["EXPECTED.toml", "never_merged.cu"]
    expected = (wrong / "EXPECTED.toml").read_text()
    assert list(tomllib.loads(expected)) == ["never_merged.cu"]
    assert "# privatized shared bins" in expected  # its comment came with it
    readme = (template / "README.md").read_text()
    assert f"grader check {NAME} kernel.cu" in readme and f"Lab `{NAME}`" in readme
    assert f"grader check {SOURCE} " not in readme
    kernel = (template / "kernel.cu").read_text()
    assert f"__global__ void {SOURCE}(" in kernel  # code keeps the kernel's own name


def test_new_lab_writes_a_readme_skeleton_that_states_what_validate_lab_checks(root):
    """Not the source lab's README, which tells of another lab: a skeleton with the
    signatures, cases and scoring, and TODO where the course writes."""
    readme = (root / "student_template" / NAME / "README.md").read_text()
    source = (labs.get(SOURCE).template_home / "README.md").read_text()
    assert "TODO" in readme and "## Going faster" in source and "Going faster" not in readme
    labs.add_roots([root])
    lab = labs.get(NAME)
    assert lab_readme.problems(lab) == []
    path = lab.template_home / "README.md"
    path.write_text(readme.replace("`uniform-517`", "uniform-517").replace("| speed | 3 |", ""))
    found = lab_readme.problems(lab)
    assert len(found) == 2 and all(str(path) in f for f in found)
    assert "does not state case uniform-517: it must hold '`uniform-517`' (`grader " in found[1]
    assert "the scoring table's row for speed" in found[0]


def test_lab_readme_rewrites_what_lab_py_decides_and_keeps_the_prose(root, capsys):
    """The author changes the definition and rewrites nothing by hand: the generated
    sections follow lab.py, and every other line stays as written."""
    definition = root / "reference_kernels" / NAME / "lab.py"
    text = definition.read_text()
    assert "random_cases=2," in text
    definition.write_text(text.replace("random_cases=2,", "random_cases=5,"))
    labs.add_roots([root])
    path = labs.get(NAME).template_home / "README.md"
    prose = path.read_text().replace("TODO: what one block covers here.", "One block: 256 bins.")
    path.write_text(prose.replace("| speed | 3 |", "| speed | 30 |"))  # a stale row
    assert len(lab_readme.problems(labs.get(NAME))) == 3  # the row and two counts of cases
    code, out, err = run(capsys, "lab-readme", NAME, "--labs", str(root))
    assert code == ExitCode.OK, err
    assert out == (
        f"Rewrote from {definition} the signatures, cases, scoring and rules sections of {path}.\n"
    )
    readme = path.read_text()
    assert "One block: 256 bins." in readme and "| speed | 30 |" not in readme
    assert "and 5 with random sizes" in readme
    assert lab_readme.problems(labs.get(NAME)) == []
    code, out, _ = run(capsys, "lab-readme", NAME, "--labs", str(root))  # the same again
    assert code == ExitCode.OK and path.read_text() == readme


def test_lab_readme_adds_the_sections_a_readme_lacks_and_leaves_the_graders_own(root, capsys):
    labs.add_roots([root])
    path = labs.get(NAME).template_home / "README.md"
    path.write_text("# My lab\n\nWritten by hand.\n")
    code, out, _ = run(capsys, "lab-readme", NAME, "--labs", str(root))
    assert code == ExitCode.OK and "Added the signatures, cases, scoring and rules sections" in out
    assert path.read_text().startswith("# My lab\n\nWritten by hand.\n\n<!-- begin generated")
    assert lab_readme.problems(labs.get(NAME)) == []
    path.unlink()  # none at all: the skeleton
    code, out, _ = run(capsys, "lab-readme", NAME, "--labs", str(root))
    assert code == ExitCode.OK and out.startswith(f"Wrote {path}, a skeleton whose sections")
    assert "TODO" in path.read_text() and lab_readme.problems(labs.get(NAME)) == []
    code, _, err = run(capsys, "lab-readme", SOURCE)
    assert code == ExitCode.USAGE and "one of the grader's own labs" in err


def test_new_lab_copies_only_what_is_named_and_says_what_there_is(capsys, tmp_path):
    into = tmp_path / "labs"
    argv = ["new-lab", "mm", "--from", "matmul-naive", "--into", str(into)]
    code, out, _ = run(capsys, *argv)
    assert code == ExitCode.OK
    listed = "slow/ (2 files), wrong/ (11 files), tune.toml"
    assert f"Not copied from matmul-naive (name any with --copy): {listed}." in out
    assert not (into / "reference_kernels" / "mm" / "wrong").exists()
    argv = ["new-lab", "mm3", "--from", "matmul-naive", "--into", str(into)]
    code, out, _ = run(capsys, *argv, "--copy", "wrong", "--copy", "slow", "--copy", "tune.toml")
    assert code == ExitCode.OK and "Not copied" not in out
    copied, source = into / "reference_kernels" / "mm3", labs.get("matmul-naive").home
    table = (copied / "wrong" / "EXPECTED.toml").read_text()
    assert table == (source / "wrong" / "EXPECTED.toml").read_text()
    assert len(list((copied / "wrong").glob("*.cu"))) == 11


@pytest.mark.parametrize(
    ("copy", "why"),
    [
        (
            "wrong/nope.cu",
            "has no 'wrong/nope.cu' to copy: it has slow/ (2 files), wrong/ (11 files), tune.toml",
        ),
        ("../../lab.py", "has no '../../lab.py' to copy"),
        ("wrong/EXPECTED.toml", "written for the known-wrong kernels copied"),
    ],
)
def test_new_lab_refuses_what_the_lab_has_not(capsys, tmp_path, copy, why):
    argv = ["new-lab", "mm", "--from", "matmul-naive", "--into", str(tmp_path), "--copy", copy]
    code, _, err = run(capsys, *argv)
    assert code == ExitCode.USAGE and why in err, err
    assert not (tmp_path / "reference_kernels").exists()


def test_the_scaffolded_reference_grades_through_labs_and_through_the_environment(
    root, capsys, monkeypatch
):
    reference = str(root / "reference_kernels" / NAME / "reference.cu")
    argv = ["check", NAME, reference, "--backend", "cpu", "--no-timing", "--quiet"]
    code, out, err = run(capsys, *argv, "--labs", str(root))
    assert code == ExitCode.OK, out + err
    labs._added.clear()
    code, _, err = run(capsys, *argv)
    assert code == ExitCode.USAGE and f"There is no lab named '{NAME}'" in err
    monkeypatch.setenv(labs.ENV, os.pathsep.join(["", str(root)]))
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.OK, out + err


def test_labs_and_template_see_the_course_root(root, capsys, tmp_path):
    code, out, _ = run(capsys, "labs", "--labs", str(root))
    assert code == ExitCode.OK
    assert len([line for line in out.splitlines() if line[:1].isalnum()]) == 14
    assert f"from the lab root {root}" in out
    code, _, err = run(capsys, "template", NAME, str(tmp_path / "work"), "--labs", str(root))
    assert code == ExitCode.OK, err
    assert (tmp_path / "work" / "kernel.cu").is_file()


def test_a_batch_grades_a_course_lab_in_its_workers(root, capsys, tmp_path):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copy(root / "reference_kernels" / NAME / "reference.cu", submissions / "alice.cu")
    out = tmp_path / "out"
    argv = ["batch", NAME, str(submissions), "--out", str(out), "--backend", "cpu", "--public-only"]
    code, printed, err = run(capsys, *argv, "--labs", str(root), "--jobs", "1")
    assert code == ExitCode.OK, printed + err
    with open(out / "gradebook.csv", newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["status"] == "passed", row


def test_init_ci_copies_the_definition_but_no_solution(root, capsys, tmp_path):
    workflow = tmp_path / "repo" / ".github" / "workflows" / "grader.yml"
    source = "git+https://github.com/course/grader@" + "0" * 40
    argv = ["init-ci", NAME, "--out", str(workflow), "--grader-source", source]
    code, out, err = run(capsys, *argv, "--labs", str(root))
    assert code == ExitCode.OK, err
    copied = tmp_path / "repo" / ".github" / "grader" / "labs" / "reference_kernels" / NAME
    assert sorted(p.name for p in copied.iterdir()) == ["lab.py"]
    assert "--labs .github/grader/labs" in workflow.read_text()


def test_a_definition_that_fails_to_load_names_its_file_and_line(root, capsys):
    definition = root / "reference_kernels" / NAME / "lab.py"
    definition.write_text(definition.read_text() + "\n\nraise ValueError('half-written')\n")
    code, out, err = run(capsys, "labs", "--labs", str(root))
    lines = definition.read_text().count("\n")
    assert code == ExitCode.USAGE
    assert f"The lab definition {definition} could not be loaded (line {lines})" in err
    assert "ValueError: half-written" in err
    # every lab that loads is listed all the same, the broken one named after them
    listed = [line.split(":")[0] for line in out.splitlines() if line[:1].isalnum()]
    assert listed == sorted(labs.listing().labs) and len(listed) == 13 and NAME not in listed
    code, out, err = run(capsys, "labs", "--labs", str(root), "--json")
    assert code == ExitCode.USAGE and "half-written" in err
    assert len(json.loads(out)["labs"]) == 13
    code, _, err = run(capsys, "check", "histogram", str(definition), "--labs", str(root))
    assert code == ExitCode.USAGE and "half-written" in err  # grading needs every lab sound


def test_a_definition_importing_a_module_that_moved_is_told_where_it_went(root, capsys):
    definition = root / "reference_kernels" / NAME / "lab.py"
    definition.write_text(definition.read_text() + "\nfrom grader.labs.model import Scoring\n")
    code, _, err = run(capsys, "labs", "--labs", str(root))
    lines = definition.read_text().count("\n")
    assert code == ExitCode.USAGE
    assert f"(line {lines}): ModuleNotFoundError" in err
    assert "grader.labs.model is now grader.model.lab: import from there." in err


@pytest.mark.parametrize("old", sorted(labs.MOVED))
def test_every_moved_module_is_gone_and_its_new_home_imports(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    importlib.import_module(labs.MOVED[old])


def test_a_definition_without_a_lab_says_so(root, capsys):
    definition = root / "reference_kernels" / NAME / "lab.py"
    definition.write_text("LAB = 3\n")
    code, _, err = run(capsys, "labs", "--labs", str(root))
    assert code == ExitCode.USAGE and "must assign LAB" in err and "assigns a int" in err


def test_two_roots_may_not_define_one_lab(root, capsys, tmp_path):
    twin = tmp_path / "twin"
    shutil.copytree(root, twin)
    code, out, err = run(capsys, "labs", "--labs", str(root), "--labs", str(twin))
    assert code == ExitCode.USAGE and f"Two lab roots define the lab {NAME}" in err
    assert f"from the lab root {root}" in out  # the first of the two is listed


def test_a_folder_that_is_no_lab_root_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "labs", "--labs", str(tmp_path))
    assert code == ExitCode.USAGE and "which is no lab root" in err


def test_a_lab_root_the_user_may_not_read_is_refused_in_a_sentence(capsys, tmp_path, monkeypatch):
    is_dir = Path.is_dir

    def denied(self):
        if self.parent == tmp_path:
            raise PermissionError(13, "Permission denied", str(self))
        return is_dir(self)

    monkeypatch.setattr(Path, "is_dir", denied)
    code, _, err = run(capsys, "labs", "--labs", str(tmp_path))
    assert code == ExitCode.USAGE and "which you may not read (permission denied)" in err


def test_new_lab_refuses_a_name_taken_or_malformed(capsys, root):
    code, _, err = run(capsys, "new-lab", SOURCE, "--from", SOURCE, "--into", str(root))
    assert code == ExitCode.USAGE and "There is a lab named" in err
    code, _, err = run(capsys, "new-lab", "My Lab", "--from", SOURCE, "--into", str(root))
    assert code == ExitCode.USAGE and "cannot name a lab" in err


def test_validate_lab_says_which_check_fails(root, capsys):
    wrong = root / "reference_kernels" / NAME / "wrong"
    for path in wrong.glob("*.cu"):
        if path.name != "never_merged.cu":
            path.unlink()
    shutil.copy(wrong / "never_merged.cu", wrong / "typo.cu")
    (wrong / "EXPECTED.toml").write_text(
        '["never_merged.cu"]\nverdict = "passed"\n'
        '["typo.cu"]\nverdict = "failed"\n["typo.cu".cpu]\nkeyword = ["still 0"]\n'
    )
    argv = ["validate-lab", NAME, "--labs", str(root), "--backend", "cpu"]
    code, out, _ = run(capsys, *argv)
    assert code == ExitCode.FAILED, out
    assert "ok   cpu  reference reference.cu" in out
    assert "ok   cpu  baseline  baseline.cu" in out
    assert "ok   cpu  template  kernel.cu" in out
    assert "ok   cpu  readme    README.md" in out
    assert "FAIL cpu  wrong     never_merged.cu" in out
    assert "verdict failed, not passed" in out
    assert "FAIL cpu  wrong     typo.cu" in out
    assert """EXPECTED.toml's entry ["typo.cu".cpu] has the key 'keyword', which is none""" in out
    assert f"{NAME}: 2 checks failed on cpu." in out
