#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image (Ubuntu).
# It installs a C++ compiler for the CPU backend and a Python of at least 3.11, makes the
# virtual environment /autograder/venv, and installs there the grader's dependencies, at
# the versions and with the file hashes requirements.txt locks (so every build of this
# zip installs the same packages), and the grader itself from the wheel in this zip
# (never from a package index). Last it grades the lab's reference once, so that the
# image holds the grader's cache that every submission's run reads.
# AUTOGRADER_ROOT exists so that the grader's own tests can run this script against a
# folder laid out like /autograder, with a compiler and a virtual environment of theirs.
set -euo pipefail

ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV="$ROOT/venv"
export DEBIAN_FRONTEND=noninteractive

python_ok() { "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
install() { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; }

command -v g++ >/dev/null || install g++
if [ ! -x "$VENV/bin/python" ]; then
    PYTHON=python3
    python_ok python3 || install python3 python3-venv
    if ! python_ok python3; then
        # Ubuntu 22.04 ships 3.10; its universe has 3.11
        install python3.11 python3.11-venv
        PYTHON=python3.11
    fi
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --no-cache-dir --require-hashes --no-deps -r "$ROOT/source/requirements.txt"
"$VENV/bin/python" -m pip install -q --no-cache-dir --no-index --no-deps "$ROOT"/source/wheel/*.whl
# The grader's cache lives in the image: filled here, read by every run (run_autograder).
export GRADER_CACHE="${GRADER_CACHE:-$ROOT/cache}"
# Grade the lab's reference once, so that each submission's fresh container finds built
# what it would otherwise build first (`warm` in grader/gradescope/run.py).
"$VENV/bin/python" -P -m grader.gradescope --warm "$ROOT"
