#!/usr/bin/env bash
# The test suites a session runs on the lent GPU machine (Ubuntu 24.04, 16 cores, root),
# each within one call's 10 minutes, printing each suite's pytest summary line last.
#
#   bash tools/gpu_machine.sh cpu   the non-GPU suite twice at once: as root on cores
#                                   0-7 and as an unprivileged user (t) on cores 8-15
#   bash tools/gpu_machine.sh gpu   the GPU tests: Nsight Compute's and the timing tests
#                                   alone (other work skews both), then the rest of the
#                                   GPU suite but the pipeline tests
#   bash tools/gpu_machine.sh pipeline  the GPU pipeline tests (tests/test_pipeline.py)
#   bash tools/gpu_machine.sh bench     issue 36's GPU figures, one after another, each
#                                   bench's whole output kept under $OUT: every lab's
#                                   rates, spread and warm check (gpu_labs.py), a batch
#                                   of matmul-tiled (batch.py), the CPU model against
#                                   Nsight Compute (profile_agreement.py); then the lines
#                                   that carry the figures
#   bash tools/gpu_machine.sh spread    the rounds of histogram's, scan's and spmv-csr's
#                                   references recorded (KERNELS names others), and
#                                   five gradings' spread replayed over them per
#                                   stopping rule (RULES; timing_spread.py), the runs
#                                   in $OUT/spread.json
#   bash tools/gpu_machine.sh timeline  where histogram's and scan's timings spend their
#                                   wall time: each launch's expected sample on the
#                                   host, the GPU's rounds, the wait after them
#                                   (timing_timeline.py)
#   bash tools/gpu_machine.sh policies  every run of a few timings recorded, and the rules
#                                   for stopping a timing replayed over them
#                                   (timing_policies.py): GPU ms against points
#   bash tools/gpu_machine.sh ab        a batch of matmul-tiled (batch.py, under
#                                   `taskset -c 2-15`) from another tree (BASE: a
#                                   folder, say a `git archive` carried under .device)
#                                   and from this one, alternating ROUNDS times (2), so
#                                   that the machine's drift falls on both; then each
#                                   run's rate and windows (BACKEND=cpu COUNT=4
#                                   BATCH_CORES=0-1 tries it, and `jobs`, on a
#                                   machine without a GPU)
#   bash tools/gpu_machine.sh jobs      the same batch at --jobs 16, 24 and 32 (JOBS):
#                                   whether more submissions in flight fill the gate
#   bash tools/gpu_machine.sh agreement  both backends' scores of every kernel
#                                   (agreement.py) into $OUT/agreement.json; RESUME names
#                                   an earlier call's, brought back into the checkout,
#                                   whose gradings count as done
#
# The caller has put the grader's dependencies on PYTHONPATH (docs/development.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
mode=${1:?usage: tools/gpu_machine.sh cpu|gpu|pipeline|bench|spread|timeline|policies|ab|jobs|agreement}
TESTS=${TESTS:-tests}  # what `cpu` runs: test files or folders, space-separated
# what `spread` records and the rules it replays (bench/timing_spread.py), space-separated
KERNELS=${KERNELS:-histogram/reference.cu@n=8388608 histogram/reference.cu@n=33554432 \
scan/reference.cu spmv-csr/reference.cu}
RULES=${RULES:-16:0.01 32:0.006}
LIMIT=${LIMIT:-540}  # seconds a suite may take
ROOT_CORES=${ROOT_CORES:-0-7} USER_CORES=${USER_CORES:-8-15} ALL_CORES=${ALL_CORES:-0-15}
OUT=${OUT:-/tmp/gpu_machine}  # the logs
CACHES=${CACHES:-/tmp/gpu_machine_caches}  # the build caches, kept out of $OUT
mkdir -p "$OUT" "$CACHES"
python3 -m compileall -q grader tests reference_kernels bench >/dev/null 2>&1  # as installed

bench() {  # NAME LIMIT COMMAND...: one bench, its whole output in $OUT/NAME.txt
    local name=$1 limit=$2
    shift 2
    timeout -k 10 "$limit" "$@" >"$OUT/$name.txt" 2>&1 || echo "$name: exit $?" >>"$OUT/$name.txt"
}

batch() {  # NAME JOBS: issue 36's batch of matmul-tiled, then the lines with its figures
    local gpus=()
    [ "${BACKEND:-cuda}" = cuda ] && gpus=(--gpus 0)
    bench "$1" 120 taskset -c "${BATCH_CORES:-2-15}" python3 bench/batch.py --lab matmul-tiled \
        --backend "${BACKEND:-cuda}" --count "${COUNT:-128}" "${gpus[@]}" --secret s --jobs "$2"
    echo "== $1"
    grep -E "submissions/min|held alone by|waiting at gate|speedup of|^host:|exit " "$OUT/$1.txt"
}

summary() {  # FILE: its pytest summary line, or why there is none
    tail -n 1 "$1" | grep -E "passed|failed|error" || echo "$1: no summary ($(tail -c 300 "$1"))"
}

suite() {  # NAME CORES WORKERS PYTEST-ARGS...: one pytest run, its log under $OUT
    local name=$1 cores=$2 workers=$3
    shift 3
    GRADER_CACHE="$CACHES/$name" timeout -k 10 "$LIMIT" taskset -c "$cores" \
        python3 -m pytest -q -p no:cacheprovider -n "$workers" --durations=10 "$@" \
        >"$OUT/$name.log" 2>&1
}

case "$mode" in
cpu)
    id -u t >/dev/null 2>&1 || useradd -m t
    tree=/tmp/tree-t  # a copy user t may read and write
    rm -rf "$tree" && cp -r . "$tree" && chown -R t "$tree"
    logs=/tmp/gpu_machine_t  # user t may not reach $OUT (under /root, say)
    rm -rf "$logs" && mkdir -p "$logs" "$CACHES/t" && chown t "$logs" "$CACHES/t"
    # shellcheck disable=SC2086  # TESTS is a list
    suite root "$ROOT_CORES" 6 -m "not gpu" $TESTS &
    # user t imports the grader from its copy, not from this checkout on PYTHONPATH
    path=${PYTHONPATH:-}
    su t -c "cd $tree && PATH=$PATH PYTHONPATH=${path//$PWD/$tree}:$tree OUT=$logs \
        CACHES=$CACHES/t LIMIT=$LIMIT USER_CORES=$USER_CORES TESTS='$TESTS' \
        bash tools/gpu_machine.sh cpu-user" &
    wait
    mkdir -p "$OUT/t" && cp "$logs/user.log" "$OUT/t/"
    echo "root:   $(summary "$OUT/root.log")"
    echo "user t: $(summary "$OUT/t/user.log")"
    ;;
cpu-user)  # run by `cpu` as user t
    # shellcheck disable=SC2086  # TESTS is a list
    suite user "$USER_CORES" 6 -m "not gpu" $TESTS
    ;;
gpu)
    alone=(tests/gpu/test_cuda_nsight.py tests/gpu/test_timing.py)
    suite gpu-alone "$ALL_CORES" 1 "${alone[@]}"
    suite gpu "$ALL_CORES" 4 -m gpu --ignore tests/test_pipeline.py "${alone[@]/#/--ignore=}"
    for name in gpu-alone gpu; do echo "$name: $(summary "$OUT/$name.log")"; done
    ;;
pipeline)
    suite gpu-pipeline "$ALL_CORES" 6 -m gpu tests/test_pipeline.py
    echo "gpu-pipeline: $(summary "$OUT/gpu-pipeline.log")"
    ;;
bench)
    bench gpu_labs 240 python3 bench/gpu_labs.py --gradings 5 --checks 3
    bench batch 150 python3 bench/batch.py --lab matmul-tiled --backend cuda --count 128 \
        --gpus 0 --secret s --jobs 16
    bench profile_agreement 180 python3 bench/profile_agreement.py --json "$OUT/profile_agreement.json"
    grep "^host:" "$OUT/gpu_labs.txt"
    sed -n '/^lab /,$p' "$OUT/gpu_labs.txt" | grep . || tail -n 3 "$OUT/gpu_labs.txt"
    grep -E "submissions/min|held alone|speedup of|exit |^host:" "$OUT/batch.txt"
    tail -n 2 "$OUT/profile_agreement.txt"
    ;;
spread)
    # shellcheck disable=SC2086  # KERNELS and RULES are lists
    bench spread "$LIMIT" python3 bench/timing_spread.py --kernels $KERNELS \
        --rules $RULES --json "$OUT/spread.json"
    sed -n '/^kernel /,$p' "$OUT/spread.txt" | grep . || tail -n 5 "$OUT/spread.txt"
    ;;
timeline)
    bench timeline "$LIMIT" python3 bench/timing_timeline.py --labs histogram scan --gradings 3
    cat "$OUT/timeline.txt"
    ;;
policies)
    bench policies "$LIMIT" python3 bench/timing_policies.py
    sed -n '/^kernel /,$p' "$OUT/policies.txt" | grep . || tail -n 5 "$OUT/policies.txt"
    ;;
jobs)
    for jobs in ${JOBS:-16 24 32}; do batch "jobs$jobs" "$jobs"; done
    ;;
ab)
    base=$(cd "${BASE:?ab needs BASE, the folder of the tree to set against this one}" && pwd) || exit 2
    here=$PWD && OUT=$(cd "$OUT" && pwd)
    for round in $(seq "${ROUNDS:-2}"); do
        for side in base this; do
            tree=$here && [ "$side" = base ] && tree=$base
            # each tree imports its own grader: the checkout on PYTHONPATH is swapped for it
            (cd "$tree" && export PYTHONPATH=${PYTHONPATH//$here/$tree}:$tree &&
                batch "$side$round" 16)
        done
    done
    ;;
agreement)
    budget=$((LIMIT - 120))  # the gradings started by then end within the limit
    bench agreement "$LIMIT" python3 bench/agreement.py --budget "$budget" \
        --json "$OUT/agreement.json" ${RESUME:+--resume "$RESUME"}
    grep -E "^(equal scores|[0-9]+ kernels)|exit " "$OUT/agreement.txt"
    ;;
*)
    echo "usage: tools/gpu_machine.sh cpu|gpu|pipeline|bench|spread|timeline|policies|ab|jobs|agreement" >&2
    exit 2
    ;;
esac
