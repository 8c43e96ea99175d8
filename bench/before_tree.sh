# shellcheck shell=bash
# Sourced by the benches that grade with a tree from before and with this one on the GPU
# machine, which has no git. `before_tree NAME REF "$@"` sets `here` (this tree's root)
# and `before` (build/NAME): given --prepare [REF2], it puts the tree of REF2 (default
# REF) there and exits; else it exits unless that tree is there.
before_tree() {
    local name="$1" default="$2" script
    script="$(basename "${BASH_SOURCE[1]}")"
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    before="$here/build/$name"
    if [[ "${3:-}" == "--prepare" ]]; then
        local ref="${4:-$default}"
        rm -rf "$before" && mkdir -p "$before"
        git -C "$here" archive "$ref" | tar -x -C "$before"
        echo "the tree of $ref is in $before: carry build/$name to the GPU machine"
        exit 0
    fi
    if [[ ! -f "$before/bench/batch.py" ]]; then
        echo "no tree from before in $before: run 'bash bench/$script --prepare'" \
            "here first, and carry build/$name" >&2
        exit 2
    fi
}
