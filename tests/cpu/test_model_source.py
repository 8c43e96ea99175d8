"""A file in another encoding than UTF-8, graded whole on the CPU backend: its Latin-1
comment costs no point, and every report says once that it is not UTF-8."""

from __future__ import annotations

from grader.grading.pipeline import Options, check
from grader.model.result import Status

KERNEL = b"""// Gr\xf6\xdfe: one thread per element of P
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0;  /* Summe \xfcber k */
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
"""


def test_a_latin1_comment_is_graded(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(KERNEL)
    result = check("matmul-naive", path, Options(backend="cpu", timing=False))
    assert result.status == Status.PASSED, result.diagnostics
    said = [n for n in result.notes if "not UTF-8" in n]
    assert said == [
        "k.cu is not UTF-8 (byte 0xF6 at line 1): graded as it is; save it as UTF-8 "
        "to silence this."
    ]
