"""Every __global__ kernel of the course notes, copied unmodified into tests/data/seeds/,
runs on the CPU backend and matches numpy. seeds.json says where each kernel comes from,
which recipe below launches it, and what it must compute."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import inp, integer, out, size_t

from grader.labs import numerics
from grader.model.result import Kind

SEEDS = Path(__file__).parents[1] / "data" / "seeds"
MANIFEST = json.loads((SEEDS / "seeds.json").read_text())
NOTES = Path(os.environ.get("GRADER_SEEDS_DIR", "/work/shared/seeds"))
ENTRIES = MANIFEST["kernels"]


def entry_id(entry) -> str:
    return f"{entry['kernel']}@{entry['file']}"


def source_of(entry) -> str:
    """The seed file as compiled: byte for byte, except that the notes' Markdown escape
    of || (\\|\\|) is undone where seeds.json says the kernel text has it."""
    text = (SEEDS / entry["file"]).read_text()
    if any(e.get("markdown_escapes") for e in ENTRIES if e["file"] == entry["file"]):
        text = text.replace("\\|", "|")
    return text


def kernel_block(entry) -> str:
    text = (SEEDS / entry["file"]).read_text()
    first, last = entry["lines"]
    begin = (
        f"// ---- begin {entry['kernel']}: {entry['notes']} lines {first}-{last}, verbatim ----\n"
    )
    end = f"\n// ---- end {entry['kernel']} ----"
    return text[text.index(begin) + len(begin) : text.index(end, text.index(begin))]


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_the_seed_file_holds_the_notes_text_unmodified(entry):
    if not (NOTES / entry["notes"]).exists():
        pytest.skip(f"the course notes are not at {NOTES} (set GRADER_SEEDS_DIR)")
    first, last = entry["lines"]
    lines = (NOTES / entry["notes"]).read_text().split("\n")[first - 1 : last]
    assert kernel_block(entry) == "\n".join(lines)
    assert re.search(rf"__global__[\s\S]*\b{entry['kernel']}\s*\(", kernel_block(entry))


def test_every_global_kernel_of_the_notes_is_listed():
    if not NOTES.is_dir():
        pytest.skip(f"the course notes are not at {NOTES} (set GRADER_SEEDS_DIR)")
    found = sorted(
        (path.name, text[: m.start()].count("\n") + 1)
        for path in NOTES.glob("*.txt")
        for text in [path.read_text()]
        for m in re.finditer(r"^__global__", text, re.MULTILINE)
    )
    listed = sorted((e["notes"], e["lines"][0]) for e in ENTRIES)
    assert found == listed


# -- recipes: (kernel args, grid, block, shared bytes, constants, expected outputs) -------


def ceil(a: int, b: int) -> int:
    return -(-a // b)


def scalars(**named) -> list:
    return [integer(name, value) for name, value in named.items()]


def values(rng, *shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def conv2d_same(entry, sizes, rng, tile=None):
    w, h = sizes["Width"], sizes["Height"]
    bx, by, _ = entry["block"]
    tx, ty = (tile, tile) if tile else (bx, by)
    image, mask = values(rng, h, w), values(rng, 5, 5)
    args = [inp("N", image), out("P", w * h), integer("Width", w), integer("Height", h)]
    expected = {"P": numerics.correlate_same(image, mask, "zero")}
    yield args, (ceil(w, tx), ceil(h, ty), 1), 0, {"Mc": mask}, expected


def conv2d_same_tiled(entry, sizes, rng):
    yield from conv2d_same(entry, sizes, rng, tile=entry["tile"])


def conv3d_flat(entry, sizes, rng):
    w, h, d = sizes["W"], sizes["H"], sizes["D"]
    tile = entry["tile"]
    volume, mask = values(rng, d, h, w), values(rng, 5, 5, 5)
    for origin in (0, 2):  # centred with zero ghost cells, and the Lab's valid convention
        ws, hs, ds = (w, h, d) if origin == 0 else (w - 4, h - 4, d - 4)
        expected = (
            numerics.correlate_same(volume, mask, "zero")
            if origin == 0
            else numerics.correlate_valid(volume, mask)
        )
        args = [inp("N", volume), out("P", ws * hs * ds)]
        args += scalars(W=w, H=h, D=d, Ws=ws, Hs=hs, Ds=ds, origin=origin)
        grid = (ceil(ws, tile[0]), ceil(hs, tile[1]), ceil(ds, tile[2]))
        yield args, grid, 0, {"Mc3": mask}, {"P": expected.reshape(-1)}


def conv3d_pitched(entry, sizes, rng):
    w, h, d = sizes["W"], sizes["H"], sizes["D"]
    volume, mask = values(rng, d, h, w), values(rng, 5, 5, 5)
    for origin in (2, 0):
        ws, hs, ds = (w, h, d) if origin == 0 else (w - 4, h - 4, d - 4)
        pitch_n, pitch_p = (w * 4 + 127) // 128 * 128 + 64, (ws * 4 + 127) // 128 * 128
        padded = np.full((d, h, pitch_n // 4), np.nan, np.float32)
        padded[:, :, :w] = volume
        want = (
            numerics.correlate_same(volume, mask, "zero")
            if origin == 0
            else numerics.correlate_valid(volume, mask)
        )
        args = [inp("Np", padded), out("Pp", ds * hs * pitch_p // 4)]
        args += [size_t("pitchNBytes", pitch_n), size_t("pitchPBytes", pitch_p)]
        args += scalars(W=w, H=h, D=d, Ws=ws, Hs=hs, Ds=ds, origin=origin)
        grid = (ceil(ws, 8), ceil(hs, 8), ceil(ds, 4))
        yield args, grid, 0, {"Mc3": mask}, {"Pp": (want, pitch_p // 4)}


def conv2d_valid(entry, sizes, rng, with_kernel_param):
    rows, cols, kr, kc = sizes["rows"], sizes["cols"], sizes["krows"], sizes["kcols"]
    orows, ocols = rows - kr + 1, cols - kc + 1
    image, kernel = values(rng, rows, cols), values(rng, kr, kc)
    table = np.full(4096, np.nan, np.float32)
    table[: kr * kc] = kernel.reshape(-1)
    args = [inp("input", image)]
    args += [inp("kernel", kernel)] if with_kernel_param else []
    args.append(out("output", orows * ocols))
    args += scalars(
        input_rows=rows,
        input_cols=cols,
        kernel_rows=kr,
        kernel_cols=kc,
        output_rows=orows,
        output_cols=ocols,
    )
    shared = 0 if with_kernel_param else (16 + kr - 1) * (16 + kc - 1) * 4
    expected = {"output": numerics.correlate_valid(image, kernel)}
    yield args, (ceil(ocols, 16), ceil(orows, 16), 1), shared, {"c_kernel": table}, expected


def conv2d_valid_naive(entry, sizes, rng):
    yield from conv2d_valid(entry, sizes, rng, with_kernel_param=True)


def conv2d_valid_tiled(entry, sizes, rng):
    yield from conv2d_valid(entry, sizes, rng, with_kernel_param=False)


def shared_only(entry, sizes, rng):
    width = sizes["Width"]
    matrix = values(rng, width, width)
    shared = entry.get("shared", 0)
    yield [inp("M", matrix), integer("Width", width)], (2, 2, 1), shared, {}, {}


shared_only_dynamic = shared_only


def block_transpose(entry, sizes, rng):
    w, h = sizes["A_width"], sizes["A_height"]
    a = values(rng, h, w)
    blocks = a.reshape(h // 16, 16, w // 16, 16).transpose(0, 3, 2, 1).reshape(h, w)
    buffer = inp("A_elements", a)
    buffer.output = True  # read and written in place
    args = [buffer, integer("A_width", w), integer("A_height", h)]
    yield args, (w // 16, h // 16, 1), 0, {}, {"A_elements": blocks}


def matmul_with(entry, sizes, rng, combine, names=("M", "N"), tile=None):
    width = sizes["Width"]
    a, b = values(rng, width, width), values(rng, width, width)
    t = tile or entry["block"][0]
    args = [inp(names[0], a), inp(names[1], b), out("P", width * width), integer("Width", width)]
    yield (
        args,
        (ceil(width, t), ceil(width, t), 1),
        entry.get("shared", 0),
        {},
        {"P": combine(a.astype(np.float64), b.astype(np.float64))},
    )


def matmul(entry, sizes, rng):
    yield from matmul_with(entry, sizes, rng, lambda a, b: a @ b)


def matmul_coarsened(entry, sizes, rng):
    yield from matmul_with(entry, sizes, rng, lambda a, b: a @ b, tile=entry["tile"])


def matmul_a_transposed(entry, sizes, rng):
    yield from matmul_with(entry, sizes, rng, lambda a, b: a.T @ b, names=("d_MT", "d_N"))


def matmul_b_transposed(entry, sizes, rng):
    yield from matmul_with(entry, sizes, rng, lambda a, b: a @ b.T, names=("d_M", "d_NT"))


def stream_read(entry, sizes, rng):
    n = sizes["n"]
    data = values(rng, n)
    yield (
        [inp("in", data), out("out", n), integer("n", n)],
        (ceil(n, 256), 1, 1),
        0,
        {},
        {"out": data * 2},
    )


def strided_read(entry, sizes, rng):
    width = sizes["Width"]
    data = values(rng, width, width)
    args = [inp("in", data), out("out", width * width), integer("Width", width)]
    yield args, (ceil(width * width, 256), 1, 1), 0, {}, {"out": 2 * data.T}


def loads_only(entry, sizes, rng):
    width = sizes["Width"]
    a, b = values(rng, width, width), values(rng, width, width)
    expected = a.astype(np.float64).sum(axis=1)[:, None] + b.astype(np.float64).sum(axis=0)[None, :]
    args = [inp("d_M", a), inp("d_N", b), out("out", width * width), integer("Width", width)]
    yield args, (ceil(width, 16), ceil(width, 16), 1), 0, {}, {"out": expected}


def transpose(entry, sizes, rng):
    width = sizes["Width"]
    data = values(rng, width, width)
    args = [inp("in", data), out("out", width * width), integer("Width", width)]
    yield args, (ceil(width, 16), ceil(width, 16), 1), 0, {}, {"out": data.T}


# -- the test ------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_seed_kernel_runs_and_matches_numpy(kit, entry):
    build = kit.build(source_of(entry), name=entry["file"])
    assert build.ok, f"{build.diagnostics}\n{build.compile.log}"
    recipe = globals()[entry["recipe"]]
    rng = np.random.default_rng(7)
    for args, grid, shared, constants, expected in recipe(entry, entry["sizes"], rng):
        result = kit.run(build, entry["kernel"], grid, entry["block"], args, constants, shared)
        if entry.get("expect") == "race":
            # The notes' exam kernel reads another thread's shared element with no
            # __syncthreads() in between: that is exactly what must be reported.
            assert Kind.RACE in [d.kind for d in result.diagnostics], result.diagnostics
            continue
        assert result.diagnostics == [], result.diagnostics
        for arg in args:
            if getattr(arg, "output", True) is False:  # inputs come back unchanged
                np.testing.assert_array_equal(result.buffers[arg.name].data, arg.data)
        for name, want in expected.items():
            got = result.buffers[name].data
            if isinstance(want, tuple):  # pitched: compare the rows' used part
                want, stride = want
                got = got.reshape(*want.shape[:-1], stride)[..., : want.shape[-1]]
            np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=2e-4)
