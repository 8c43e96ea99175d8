"""A grading worker: a process of its own that grades one submission at a time for a batch,
with one backend kept open across submissions.

It talks to the batch over two pipes whose numbers it gets in argv, after the batch's
pid (it dies with the batch, grader.course.isolation.die_with_parent), one JSON object per
line. The first line from the batch says what to grade with (the secret included, so the
secret is never in this process's environment or command line); each next line is one
submission, with a nonce that the answer must carry. The worker stops itself after a
submission that crashed or hung, so that the next one starts in a fresh process with a
fresh backend (a CUDA context after an illegal address is not to be trusted)."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import IO, Any

from grader import labs
from grader.backends import get_backend
from grader.course import isolation
from grader.course.gpus import Gate, GatedBackend
from grader.course.stages import Clocked
from grader.errors import GraderError
from grader.grading.pipeline import Options, grade, prepare
from grader.model.result import Kind, Result
from grader.report import json as json_report

# After a result with one of these, the worker's backend may be in a bad state.
FRESH_AFTER = {Kind.CRASH, Kind.TIMEOUT}


def send(outbox: IO[str], message: dict[str, Any]) -> None:
    outbox.write(json.dumps(message, allow_nan=False) + "\n")
    outbox.flush()


def open_backend(start: dict[str, Any]) -> Clocked:
    backend = get_backend(start["backend"], jobs=start["backend_jobs"])
    waits: Counter[str] = Counter()
    if backend.measures_speed():
        backend = GatedBackend(backend, Gate(Path(start["gates"]), start["gate"], waits))
    clocked = Clocked(backend, waits)
    try:
        prepare(clocked)  # before "ready": no submission's deadline pays for it
    except BaseException:
        clocked.close()
        raise
    return clocked


def needs_fresh_worker(result: Result) -> bool:
    return any(d.kind in FRESH_AFTER for d in result.all_diagnostics())


def serve(inbox: IO[str], outbox: IO[str]) -> int:
    start = json.loads(inbox.readline())
    labs.add_roots(start["lab_roots"])
    lab = labs.get(start["lab"])
    options = Options(
        backend=start["backend"],
        secret=start["secret"],
        timeout=start["timeout"],
        timing=start["timing"],
        profile=start.get("profile", False),
        shared_host=True,
    )
    try:
        backend = open_backend(start)
    except GraderError as error:
        send(outbox, {"type": "setup_error", "message": str(error)})
        return 2
    with backend:
        ready = {"backend": backend.name, "device": backend.device()}
        send(outbox, {"type": "ready", **ready, "speed": backend.measures_speed()})
        for line in inbox:
            job = json.loads(line)
            started = time.monotonic()
            try:
                result = grade(lab, Path(job["path"]), backend, options)
            except GraderError as error:  # the submission's file, in a sentence: stop
                failed = {"type": "failed", "nonce": job["nonce"], "message": str(error)}
                send(outbox, {**failed, "said": True})
                return 1
            except Exception as error:  # a grader bug or a broken backend: say so, stop
                detail = traceback.format_exception_only(error)[-1].strip()
                send(outbox, {"type": "failed", "nonce": job["nonce"], "message": detail})
                return 1
            last = needs_fresh_worker(result)
            stages = backend.take(time.monotonic() - started)
            message = {"type": "result", "nonce": job["nonce"], "last": last, "stages": stages}
            send(outbox, {**message, "result": json_report.to_dict(result)})
            if last:
                return 0
    return 0


def main(argv: list[str]) -> int:
    parent, inbox_fd, outbox_fd = (int(arg) for arg in argv[1:4])
    isolation.die_with_parent(parent)
    isolation.make_undumpable()
    for fd in (inbox_fd, outbox_fd):  # no process this one starts may hold the channel
        os.set_inheritable(fd, False)
    with (
        open(inbox_fd, encoding="utf-8") as inbox,
        open(outbox_fd, "w", encoding="utf-8") as outbox,
    ):
        return serve(inbox, outbox)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
