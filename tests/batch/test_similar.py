"""The similar pairs as pages (grader/batch/similar.py): `grader similar` end to end on a
class of 40, a batch's summary.html with its top pairs, and the folders and files a TA
may hand it by mistake."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import similarity_kit as kit
from batch_data import make_result
from lxml import html as lxml_html

from grader import cli
from grader.batch import outputs
from grader.batch.outputs import Manifest
from grader.batch.run import store
from grader.batch.state import Settings, secret_fingerprint
from grader.course.discover import Entry, Person
from grader.model.source import MAX_BYTES


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("course")
    folder = kit.write(root / "submissions", kit.submissions())
    public = root / "public"
    for name, text in kit.public().items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    return folder, public


def table_rows(page: Path) -> list[list[str]]:
    tree = lxml_html.fromstring(page.read_text())
    return [
        [cell.text_content().strip() for cell in row.findall("td")]
        for row in tree.xpath('//table[@class="similar"]/tr[td]')
    ]


def test_grader_similar_lists_the_copies_first_and_writes_their_pages(course, tmp_path, capsys):
    folder, public = course
    out = tmp_path / "similar"
    code = cli.main(["similar", kit.LAB, str(folder), "--against", str(public), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    lines = printed.splitlines()
    assert lines[0].startswith("Compared 40 submissions and 1 public solution (matmul-tiled): 2 ")
    assert f"{kit.PUBLIC_COPY}  public solution {kit.PUBLIC}" in lines[1]
    assert "  ".join(kit.COPIES) in lines[2]
    assert lines[-1] == "Evidence for a person to read, never a grade."
    rows = table_rows(out / "similar.html")
    assert [(r[1], r[2]) for r in rows] == [
        (kit.PUBLIC_COPY, f"public solution {kit.PUBLIC}"),
        kit.COPIES,
    ]
    assert rows[0][0] == "100.0%"
    page = (out / "similar" / "pair-2.html").read_text()
    assert 'href="../similar.html"' in page
    assert "sharedA" in page and "tileM" in page  # dana's and eli's own names, side by side
    tree = lxml_html.fromstring(page)
    assert tree.xpath('//tr[starts-with(@id, "a")][@class]')  # lines in a passage are marked
    assert sorted(p.name for p in (out / "similar").iterdir()) == ["pair-1.html", "pair-2.html"]


def test_without_out_nothing_is_written_and_a_lower_threshold_lists_more(course, capsys):
    folder, _ = course
    assert cli.main(["similar", kit.LAB, str(folder), "--threshold", "30%"]) == 0
    printed = capsys.readouterr().out
    assert ": 2 pairs with 30.0% or more" in printed
    assert "Side by side" not in printed


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "half", "-10%"])
def test_a_threshold_is_a_share(value, capsys):
    assert cli.main(["similar", kit.LAB, ".", f"--threshold={value}"]) == 2
    assert "is not a share above 0 and at most 1" in capsys.readouterr().err


def test_what_cannot_be_compared_is_named_and_the_rest_is_compared(tmp_path, capsys):
    folder = kit.write(tmp_path / "subs", {"dana": kit.planted()["dana"]})
    (folder / "eli.cu").write_bytes(kit.planted()["eli"].encode() + b"// Gr\xf6\xdfe\n")
    (folder / "big.cu").write_text("x" * (MAX_BYTES + 1))
    (folder / "two").mkdir()
    (folder / "two" / "a.cu").write_text("int a;")
    (folder / "two" / "b.cu").write_text("int b;")
    assert cli.main(["similar", kit.LAB, str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "Compared 2 submissions (matmul-tiled): 1 pair with" in printed  # the Latin-1 one too
    assert f"Not compared: big: big.cu is {MAX_BYTES + 1} bytes" in printed
    assert "Not compared: two: " in printed


def test_a_missing_public_folder_and_an_out_inside_the_submissions_are_refused(tmp_path, capsys):
    folder = kit.write(tmp_path / "subs", {"a": kit.template()})
    assert cli.main(["similar", kit.LAB, str(folder), "--against", str(tmp_path / "no")]) == 2
    assert "is not a folder of public solutions" in capsys.readouterr().err
    assert cli.main(["similar", kit.LAB, str(folder), "--out", str(folder / "pages")]) == 2
    assert "inside" in capsys.readouterr().err


def test_public_solutions_are_read_at_any_depth_and_never_through_a_link(tmp_path):
    from grader.batch.similar import public_solutions

    public = tmp_path / "public"
    (public / "repo" / "src").mkdir(parents=True)
    (public / "repo" / "src" / "k.cu").write_text("int k;")
    (public / "repo" / "k.cuh").write_text("int h;")
    (public / "notes.md").write_text("not code")
    (public / "secret.cu").symlink_to(tmp_path / "elsewhere.cu")
    (public / "linked").symlink_to(tmp_path, target_is_directory=True)
    texts, skipped = public_solutions(public)
    assert sorted(texts) == ["public/repo/k.cuh", "public/repo/src/k.cu"]
    assert skipped == []


# -- the batch's summary -----------------------------------------------------------------

SETTINGS = Settings(kit.LAB, "cpu", 5.0, False, secret_fingerprint(None))


def write_batch(out: Path, texts: dict[str, str]) -> None:
    """OUT as a batch leaves it: each student's reports, with the text it graded."""
    for student, text in texts.items():
        path = Path(f"/course/{student}.cu")
        result = make_result(kit.LAB, submission=f"{student}.cu")
        result.source = text
        key = hashlib.sha256(text.encode()).hexdigest()
        store(out, Entry(student, [Person(student)], path, path), key, result)
    outputs.write_course_files(out, Manifest(SETTINGS, sorted(texts)))


def test_the_summary_lists_the_batchs_top_pairs_with_their_pages(tmp_path):
    out = tmp_path / "out"
    texts = {**kit.pool(), kit.TEMPLATE: kit.template(), **kit.planted()}
    write_batch(out, texts)
    summary = out / "summary.html"
    rows = table_rows(summary)
    assert [(r[1], r[2]) for r in rows] == [kit.COPIES]  # a batch has no public solutions
    tree = lxml_html.fromstring(summary.read_text())
    links = tree.xpath('//table[@class="similar"]//a/@href')
    assert links == ["students/dana/report.html", "students/eli/report.html", "similar/pair-1.html"]
    page = (out / "similar" / "pair-1.html").read_text()
    assert 'href="../summary.html"' in page
    # written again, as a resumed run or a merge writes it: the same bytes
    before = summary.read_bytes(), page
    outputs.write_course_files(out, outputs.read_manifest(out))
    assert (summary.read_bytes(), (out / "similar" / "pair-1.html").read_text()) == before


def test_a_batch_without_copies_says_none_and_keeps_no_old_page(tmp_path):
    out = tmp_path / "out"
    write_batch(out, {**kit.planted(), "histogram": kit.pool()["histogram-reference"]})
    assert (out / "similar" / "pair-1.html").exists()
    write_batch(out, {"histogram": kit.pool()["histogram-reference"]})
    assert not list((out / "similar").iterdir())
    summary = (out / "summary.html").read_text()
    assert "<h2>Similar submissions</h2>\n<p>Pairs of submissions" in summary
    assert (
        "counts for no pair. Evidence for a person to read, never a grade.</p>\n<p>None.</p>"
        in summary
    )
