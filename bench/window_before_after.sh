#!/usr/bin/env bash
# The timing window before and after, on one GPU: the same batch (bench/batch.py) graded
# by a tree from before and by this one, each printing where its timings' window went
# (grader.backends.window) and each kernel's median speedup, then an uncontended
# `grader check` of each of the lab's own kernels on both trees, whose speedups the
# batch's must match within 1%.
#
# Here, first (the device machine has no git): put the tree from before under build/
#     bash bench/window_before_after.sh --prepare [REF]    # REF: a843165, main + the meter
# then on the GPU machine, from this tree's root, carrying build/window-before:
#     bash bench/window_before_after.sh
# Settings from the environment: LAB (matmul-tiled), COUNT (128), JOBS (16), CPUS (2-15,
# for taskset), PAIRS (1: before then after; 2 interleaves two such pairs), CHECKS (3
# checks of each kernel on each tree), and OUT (a folder to keep the log in, as
# window_before_after.txt).
set -euo pipefail

# shellcheck source=bench/before_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/before_tree.sh"
before_tree window-before a843165 "$@"

lab="${LAB:-matmul-tiled}"
count="${COUNT:-128}"
jobs="${JOBS:-16}"
cpus="${CPUS:-2-15}"
pairs="${PAIRS:-1}"
repeats="${CHECKS:-3}"
log="${OUT:-/tmp}/window_before_after.txt"
: >"$log"

batch() {  # tree, its label: one batch, timing and hidden cases on
    local tree="$1" label="$2"
    echo "== $label: bench/batch.py --lab $lab --count $count --jobs $jobs --gpus 0" | tee -a "$log"
    if ! (cd "$tree" && GRADER_CACHE="/tmp/window-cache-$label" taskset -c "$cpus" python3 \
        bench/batch.py --lab "$lab" --backend cuda --count "$count" --gpus 0 --secret s \
        --jobs "$jobs" 2>"/tmp/window-$label.err") | tee -a "$log"; then
        echo "the $label batch failed; its last words:" | tee -a "$log"
        tail -n 20 "/tmp/window-$label.err" | tee -a "$log"
        exit 1
    fi
}

speedup='
import json, sys
label, kernel = sys.argv[1:]
try:
    performance = json.load(open("/tmp/window-check.json"))["performance"] or {}
except (OSError, ValueError, KeyError):
    performance = {}
print(f"  {label}: grader check {kernel}: speedup", performance.get("speedup"))
'

checks() {  # tree, its label: each of the lab's kernels checked alone, its speedup
    local tree="$1" label="$2" kernel
    for kernel in "$tree/reference_kernels/$lab"/*.cu; do
        for _ in $(seq "$repeats"); do
            rm -f /tmp/window-check.json
            (cd "$tree" && GRADER_CACHE="/tmp/window-cache-$label" python3 -m grader check \
                "$lab" "$kernel" --backend cuda --json /tmp/window-check.json \
                >/dev/null 2>&1) || true
            python3 -c "$speedup" "$label" "$(basename "$kernel")" | tee -a "$log"
        done
    done
}

for _ in $(seq "$pairs"); do
    batch "$before" before
    batch "$here" after
done
echo "== uncontended grader check, one at a time" | tee -a "$log"
checks "$before" before
checks "$here" after
