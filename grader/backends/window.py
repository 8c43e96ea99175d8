"""Where a timing's and a case run's seconds go, phase by phase, on the GPU worker's own
clock: the wait for the gate, then the exclusive window, from the gate taken to the gate
released, which holds all of the request's use of the GPU, its buffers' placing and
freeing too, so that no other process's comes between. A batch on one GPU is capped by
the windows of its timings and cases together, so bench/batch.py prints these per
submission (grader.course.stages carries them). The worker is the grader's code (a
submission brings device code alone), and the figures only describe: nothing here
changes a grade.

Cheap by design: a phase is a perf_counter lap summed over the timing, never a record
per launch."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

GATE = "acquire gate"  # waiting for the gate (a batch's other processes on this GPU)
# Inside the window, in the order a timing meets them.
PLACE = "place buffers"  # constants set, buffers mapped, the checker's and rig's allocations
BEFORE = "checker.before"  # fresh inputs drawn, outputs poisoned: on the GPU, queued
L2 = "L2 reset"  # persisting lines made normal before each timed run (backends.cuda.l2)
LAUNCHES = "launches"  # the hold, the flush, the events and the kernels, queued
PREPARE = "checker.prepare"  # the sample's coordinates, on the host while the run runs
WAITS = "event waits"  # the host waiting for a timed run's end event: the kernels
AFTER = "checker.after"  # the sample gathered and read back
CEILINGS = "ceilings"  # the fp32 peak and copy bandwidth, once per worker
SETTLE = "settle"  # everything queued finished before the buffers are freed
FREE = "free buffers"
HELD = "held"  # all of the window, gate acquired to gate released
INSIDE = (PLACE, BEFORE, L2, LAUNCHES, PREPARE, WAITS, AFTER, CEILINGS, SETTLE, FREE)
OTHER = "other"  # held, less the phases inside: Python between them, the plan's sums
PHASES = (GATE, *INSIDE, HELD)

# A case run's (one run request: a case runs two or three, grader.backends.cuda.backend).
CASE_GATE = "case: acquire gate"
CASE_PLACE = "case: place buffers"  # module restored, constants set, buffers mapped, filled
CASE_FILL = "case: fill shared"  # every SM's shared memory made NaN (gpus.py says why)
CASE_KERNELS = "case: kernels"  # each waited for, so that a failure names its own
CASE_READ = "case: read back"  # every buffer downloaded with its canaries
CASE_FREE = "case: free buffers"
CASE_HELD = "case: held"
CASE_INSIDE = (CASE_PLACE, CASE_FILL, CASE_KERNELS, CASE_READ, CASE_FREE)
CASE_PHASES = (CASE_GATE, *CASE_INSIDE, CASE_HELD)


class Window:
    """A request's seconds by phase (PHASES or CASE_PHASES), each summed from laps of
    perf_counter."""

    def __init__(self, phases: tuple[str, ...] = PHASES) -> None:
        self.seconds = dict.fromkeys(phases, 0.0)

    def lap(self, phase: str, since: float) -> float:
        """Add the seconds from `since` to now to `phase`; now, for the next lap."""
        now = time.perf_counter()
        self.seconds[phase] += now - since
        return now

    def to_json(self) -> dict[str, float]:
        return dict(self.seconds)


def read(sent: object, names: tuple[str, ...] = PHASES) -> dict[str, float]:
    """The seconds a worker sent by `names` (its phases, or grader.course.stages'
    stages), with anything else left out: another name, or a value that is not a finite
    count of seconds."""
    if not isinstance(sent, Mapping):
        return {}
    return {
        name: float(value)
        for name, value in sent.items()
        if name in names and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
    }


def other(phases: Mapping[str, float], inside: tuple[str, ...] = INSIDE, held: str = HELD) -> float:
    """What of the held window no phase `inside` it accounts for."""
    return max(0.0, phases.get(held, 0.0) - sum(phases.get(p, 0.0) for p in inside))
