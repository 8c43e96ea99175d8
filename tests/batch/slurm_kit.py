"""A single-node Slurm for a test, from the distribution's packages (slurmctld, slurmd,
slurm-client, munge): munged, slurmctld and slurmd started in a folder of the test's
own, on free ports, with no systemd and no cgroups, and stopped by their process ids.

The node claims 16 CPUs whatever this machine has (`config_overrides`), so that every
task of a small array runs at once, each with the CPUs a `--slurm` script asks for."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")
NODE_CPUS = 16
READY_SECONDS = 60.0


def missing() -> str:
    """Why no cluster can be brought up here, or ""."""
    absent = [p for p in PROGRAMS if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]
    if absent:
        return (
            f"Slurm is not installed ({', '.join(absent)} missing): "
            "apt-get install slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        return "slurmd runs jobs only as root here, and the tests do not run as root"
    return ""


def _program(name: str, path: str | None = None) -> str:
    return shutil.which(name, path=path) or str(Path("/usr/sbin", name))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF = """\
ClusterName=gradertest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MinJobAge=600
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=grading Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """munged, slurmctld and slurmd in `root`; `env` is what a client command needs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.daemons: list[subprocess.Popen] = []
        for folder in ("state", "spool"):
            (root / folder).mkdir(parents=True)
        key = root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        conf = root / "slurm.conf"
        ports = {"ctld_port": _free_port(), "slurmd_port": _free_port()}
        conf.write_text(CONF.format(host=self.host, root=root, cpus=NODE_CPUS, **ports))
        self.env = {**os.environ, "SLURM_CONF": str(conf)}

    def start(self) -> None:
        r = self.root
        self._daemon("munged", "-F", "--force", f"--socket={r}/munge.sock",
                     f"--key-file={r}/munge.key", f"--log-file={r}/munged.log",
                     f"--pid-file={r}/munged.pid", f"--seed-file={r}/munged.seed")  # fmt: skip
        self._until(lambda: (r / "munge.sock").exists(), "munged made no socket")
        self._daemon("slurmctld", "-D", "-i")
        self._daemon("slurmd", "-D")
        self._until(self._idle, "the node never became idle")

    def _daemon(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - kept for its life
        proc = subprocess.Popen([_program(name), *args], env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, cwd=self.root)  # fmt: skip
        log.close()
        self.daemons.append(proc)

    def _idle(self) -> bool:
        done = self.run("sinfo", "-h", "-o", "%t", check=False)
        return done.stdout.strip() == "idle"

    def _until(self, ready, what: str) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while not ready():
            dead = [p.args[0] for p in self.daemons if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"{what} ({', '.join(dead)} ended)\n{self.logs()}")
            time.sleep(0.2)

    def run(self, *cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        env = {**self.env, **kw.pop("env", {})}
        program = _program(cmd[0], env.get("PATH"))
        done = subprocess.run([program, *cmd[1:]], env=env, capture_output=True,
                              text=True, timeout=120, **kw)  # fmt: skip
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr}\n{self.logs()}")
        return done

    def states(self, job: str) -> list[str]:
        """The state of each task of the job (an array's one per task)."""
        shown = self.run("scontrol", "-o", "show", "job", job).stdout
        return [
            field.split("=", 1)[1]
            for line in shown.splitlines()
            for field in line.split()
            if field.startswith("JobState=")
        ]

    def wait(self, job: str, seconds: float) -> list[str]:
        """The states of the job's tasks once none is pending or running."""
        deadline = time.monotonic() + seconds
        while True:
            states = self.states(job)
            if states and not {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING"} & set(states):
                return states
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job} still {states} after {seconds:g} s\n{self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        parts = []
        for path in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            tail = path.read_text(errors="replace")[-2000:]
            parts.append(f"--- {path.name}\n{tail}")
        return "\n".join(parts)

    def stop(self) -> None:
        for proc in reversed(self.daemons):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.daemons):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
