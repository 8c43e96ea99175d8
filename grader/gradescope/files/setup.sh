#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image (Ubuntu).
# It installs a C++ compiler for the CPU backend and a Python of at least 3.11 with the
# grader's dependencies in /autograder/venv. The grader itself runs from the zip's copy
# in /autograder/source, so nothing here needs the network at grading time.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends g++ python3 python3-venv python3-pip

PYTHON=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    # Ubuntu 22.04 ships 3.10; its universe has 3.11
    apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv
    PYTHON=python3.11
fi

"$PYTHON" -m venv /autograder/venv
/autograder/venv/bin/python -m pip install -q --no-cache-dir -r /autograder/source/requirements.txt
