#!/usr/bin/env bash
# Issue 36's warm check and slow-kernel timing, before and after, on one GPU call of about
# 7 minutes: for a tree from before (main) and for this one,
#   1. a batch (bench/batch.py: submissions/min, the timing window per submission, and the
#      median speedup of baseline.cu and of reference.cu over their copies),
#   2. a warm `grader check` of each lab's reference, hidden cases off, CHECKS times each,
#      the two trees interleaved (bench/warm_ab.py, each lab checked once first, to fill
#      the caches),
#   3. the reference's self-speedup over GRADINGS gradings for SELF_LABS (histogram, scan
#      and spmv-csr, the labs whose gradings stray most) (bench/gpu_labs.py, which needs
#      CuPy).
# Python's bytecode is compiled first in both trees (the device sets
# PYTHONDONTWRITEBYTECODE, which would leave every check to compile the grader again).
#
# Here, first (the device machine has no git): put the tree from before under build/
#     bash bench/gpuspeed_before_after.sh --prepare [REF]    # REF: main
# then on the GPU machine, from this tree's root, carrying build/gpuspeed-before (and,
# where PyCUDA is not installed, a folder of its wheels, named by WHEELS):
#     bash bench/gpuspeed_before_after.sh
# Settings from the environment: LAB (matmul-tiled), COUNT (128), JOBS (16), CPUS (2-15,
# for taskset), CHECKS (3), GRADINGS (5), SELF_TREES (the trees of part 3: before after),
# SELF_LABS, WHEELS, and OUT (a folder to keep the log in, as gpuspeed_before_after.txt).
set -euo pipefail

# shellcheck source=bench/before_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/before_tree.sh"
before_tree gpuspeed-before main "$@"

lab="${LAB:-matmul-tiled}"
count="${COUNT:-128}"
jobs="${JOBS:-16}"
cpus="${CPUS:-2-15}"
repeats="${CHECKS:-3}"
gradings="${GRADINGS:-5}"
read -ra self_labs <<<"${SELF_LABS:-histogram scan spmv-csr}"
log="${OUT:-/tmp}/gpuspeed_before_after.txt"
: >"$log"
unset PYTHONDONTWRITEBYTECODE GRADER_SECRET

if ! python3 -c "import pycuda" 2>/dev/null; then
    if [[ -z "${WHEELS:-}" ]]; then
        echo "PyCUDA is not installed: name a folder of its wheels in WHEELS" >&2
        exit 2
    fi
    python3 -m pip install -q --no-index --no-deps --target /tmp/gpuspeed-site "$WHEELS"/*.whl
    export PYTHONPATH="/tmp/gpuspeed-site${PYTHONPATH:+:$PYTHONPATH}"
fi

tree_of() { [[ "$1" == before ]] && echo "$before" || echo "$here"; }
cache_of() { echo "/tmp/gpuspeed-cache-$1"; }

for label in before after; do
    (cd "$(tree_of "$label")" && python3 -m compileall -q grader reference_kernels bench)
done

echo "== 1. batch: bench/batch.py --lab $lab --count $count --jobs $jobs --gpus 0 --secret s" |
    tee -a "$log"
for label in before after; do
    echo "-- $label" | tee -a "$log"
    if ! (cd "$(tree_of "$label")" && GRADER_CACHE="$(cache_of "$label")" timeout 130 \
        taskset -c "$cpus" python3 bench/batch.py --lab "$lab" --backend cuda \
        --count "$count" --gpus 0 --secret s --jobs "$jobs" \
        2>"/tmp/gpuspeed-batch-$label.err") | tee -a "$log"; then
        echo "the $label batch failed; its last words:" | tee -a "$log"
        tail -n 20 "/tmp/gpuspeed-batch-$label.err" | tee -a "$log"
    fi
done

echo "== 2. warm grader check of each lab's reference, hidden cases off, $repeats times" \
    "(bench/warm_ab.py); then $lab's baseline and reference checked alone, the batch's" \
    "speedups to match" | tee -a "$log"
mapfile -t labs < <(for f in "$here"/reference_kernels/*/lab.py; do basename "$(dirname "$f")"; done)
timeout 200 python3 "$here/bench/warm_ab.py" --tree "before=$before" --tree "after=$here" \
    --labs "${labs[@]}" --runs "$repeats" 2>&1 | tee -a "$log" || true
timeout 120 python3 - "$before" "$here" "$repeats" "$lab" <<'EOF' 2>&1 | tee -a "$log" || true
import json, os, sys, tempfile
from pathlib import Path

sys.path.insert(0, sys.argv[2])
from bench.warm_ab import graded

trees = dict(zip(("before", "after"), map(Path, sys.argv[1:3])))
repeats, batched = int(sys.argv[3]), sys.argv[4]


def check(label, lab, shown="-q", kernel="reference.cu", *more):
    """Seconds of one `grader check` of the lab's `kernel` (NaN where it did not grade),
    and what it printed."""
    cache = Path(f"/tmp/gpuspeed-cache-{label}")
    return graded(trees[label], cache, lab, "cuda", kernel, shown, *more)


def steps(label, lab):
    """The check's own split of its seconds (-v's last line)."""
    seconds, printed = check(label, lab, "-v")
    last = [line for line in printed.splitlines() if line.startswith("Steps:")]
    return f"{seconds:.2f} s; {last[-1] if last else printed[-300:]}"


def speed(label, lab, kernel):
    """The speedup of one uncontended check of `kernel`, and the rounds it was timed in."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        check(label, lab, "-q", kernel, "--json", report)
        try:
            performance = json.load(open(report))["performance"] or {}
        except (OSError, ValueError, KeyError):
            performance = {}
    return f"{performance.get('speedup', float('nan')):.4f} ({performance.get('rounds')} rounds)"


for lab in ("matmul-tiled", "spmv-jds"):
    for label in trees:
        print(f"{lab} {label}: {steps(label, lab)}", flush=True)
for kernel in ("baseline.cu", "reference.cu"):
    for label in trees:
        found = ", ".join(speed(label, batched, kernel) for _ in range(repeats))
        print(f"{batched} {kernel} alone, {label}: speedup {found}", flush=True)
EOF

echo "== 3. self-speedups: bench/gpu_labs.py --labs ${self_labs[*]} --gradings $gradings" |
    tee -a "$log"
for label in ${SELF_TREES:-before after}; do
    echo "-- $label" | tee -a "$log"
    (cd "$(tree_of "$label")" && GRADER_CACHE="$(cache_of "$label")" \
        timeout $((30 + 30 * ${#self_labs[@]})) \
        python3 bench/gpu_labs.py --labs "${self_labs[@]}" --gradings "$gradings") 2>&1 |
        tee -a "$log" || true
done
