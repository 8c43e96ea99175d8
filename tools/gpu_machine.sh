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
#
# The caller has put the grader's dependencies on PYTHONPATH (docs/development.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
mode=${1:?usage: tools/gpu_machine.sh cpu|gpu|pipeline}
TESTS=${TESTS:-tests}  # what `cpu` runs: test files or folders, space-separated
LIMIT=${LIMIT:-540}  # seconds a suite may take
ROOT_CORES=${ROOT_CORES:-0-7} USER_CORES=${USER_CORES:-8-15} ALL_CORES=${ALL_CORES:-0-15}
OUT=${OUT:-/tmp/gpu_machine}  # the logs
CACHES=${CACHES:-/tmp/gpu_machine_caches}  # the build caches, kept out of $OUT
mkdir -p "$OUT" "$CACHES"
python3 -m compileall -q grader tests >/dev/null 2>&1

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
*)
    echo "usage: tools/gpu_machine.sh cpu|gpu|pipeline" >&2
    exit 2
    ;;
esac
