"""Is a CUDA device usable here? Asked in a subprocess, so that the grader itself never
imports PyCUDA or creates a CUDA context. `python -m grader.backends.cuda.probe` prints
one JSON object: the device, or why there is none.

A yes is remembered until the machine restarts or its driver, device list or Python
changes: asking costs a CUDA start-up (0.4 s on an H200), and the GPU worker's own start
checks the device again, forgetting the yes (`forget`) when it fails."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path

from grader import defaults, spawn

PROBE_TIMEOUT = 60.0
INSTALL_HINT = "pip install 'cuda-lab-grader[gpu]'"


@cache
def device_info() -> dict:
    """{"ok": True, "name", "arch", "driver", "cuda", "memory"} or {"ok": False, "reason"}."""
    from grader.toolchain import nvcc  # not before: `grader check` asks first thing

    if nvcc.find() is None:
        return {
            "ok": False,
            "reason": "nvcc is not installed: the CUDA toolkit is needed to "
            "compile kernels (set CUDA_HOME or put nvcc on PATH).",
        }
    memory = _memory()
    info = _remembered(memory)
    if info is None:
        info = _ask()
        if info.get("ok"):
            _remember(memory, info)
    return _unloadable(info, nvcc.find(), nvcc.version()) or info


def _unloadable(info: dict, compiler: str, version: str) -> dict | None:
    """Why a usable device cannot load what `compiler` (of CUDA `version`) compiles: a
    driver of an older CUDA major release (NVIDIA's nvcc from PyPI is 13.0 whatever the
    driver); None where it can."""
    majors = [re.match(r"\d+", v or "") for v in (info.get("cuda"), version)]
    if not info.get("ok") or not all(majors) or int(majors[0][0]) >= int(majors[1][0]):
        return None
    return {
        "ok": False,
        "reason": f"the driver supports CUDA {info['cuda']}, and the nvcc found ({compiler}) "
        f"is CUDA {version}, whose kernels that driver cannot load: update the driver, or "
        f"install a CUDA toolkit of release {info['cuda']} and put its nvcc on PATH.",
    }


def forget() -> None:
    """Ask again next time: the device that answered yes did not start."""
    with contextlib.suppress(OSError):
        _memory().unlink()
    device_info.cache_clear()


def _memory() -> Path:
    """Where this machine's yes is kept, named for what it depends on."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        driver = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        driver = ""
    seen = [boot, driver, os.environ.get("CUDA_VISIBLE_DEVICES", "*"), *spawn.import_path()]
    digest = hashlib.sha256("\0".join(seen).encode()).hexdigest()[:32]
    return defaults.cache_dir() / "probe" / f"{digest}.json"


def _remembered(path: Path) -> dict | None:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("ok") is True else None


def _remember(path: Path, info: dict) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(info))
        partial.replace(path)


def _ask() -> dict:
    """The probe subprocess's answer."""
    try:
        proc = subprocess.run(
            spawn.python_module("grader.backends.cuda.probe"),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            env=spawn.helper_env(),
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return {
            "ok": False,
            "reason": f"the CUDA probe did not answer within "
            f"{PROBE_TIMEOUT:.0f} s: the driver may be hung.",
        }
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "reason": f"the CUDA probe failed: {last}"}


def probe() -> tuple[bool, str]:
    """Whether a CUDA device is usable, and a sentence: the device, or why not."""
    info = device_info()
    if not info["ok"]:
        return False, info["reason"]
    return True, describe(info)


def describe(info: dict) -> str:
    driver = f"driver {info['driver']}, " if info.get("driver") else ""
    return f"{info['name']} ({info['arch']}, {driver}CUDA {info['cuda']})"


# -- in the probe subprocess --------------------------------------------------------------


def driver_version() -> str | None:
    """The kernel driver's version, e.g. '580.159', where the system shows it."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        text = ""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+)", text)
    if match:
        return match.group(1)
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"\s*(\d+\.\d+)", out)
    return match.group(1) if match else None


def _examine() -> dict:
    try:
        import pycuda.driver as cuda
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "pycuda":
            return {"ok": False, "reason": f"PyCUDA is not installed: {INSTALL_HINT}"}
        return {"ok": False, "reason": f"PyCUDA cannot be imported: {err}"}
    except ImportError as err:
        return {
            "ok": False,
            "reason": f"PyCUDA cannot load the CUDA driver ({err}): "
            "this machine has no NVIDIA driver.",
        }
    try:
        cuda.init()
        count = cuda.Device.count()
    except cuda.Error as err:
        return {"ok": False, "reason": f"no CUDA device: cuInit failed with {err}."}
    if count == 0:
        return {"ok": False, "reason": "no CUDA device: the driver reports none."}
    device = cuda.Device(0)
    major, minor = device.compute_capability()
    version = cuda.get_driver_version()
    return {
        "ok": True,
        "name": device.name(),
        "arch": f"sm_{major}{minor}",
        "driver": driver_version(),
        "cuda": f"{version // 1000}.{version % 1000 // 10}",
        "memory": device.total_memory(),
    }


def main() -> None:
    print(json.dumps(_examine()), flush=True)


if __name__ == "__main__":
    main()
