"""The CPU backend: the same unmodified .cu file, compiled with the system C++ compiler
against a CUDA shim, run in a sandboxed worker where every CUDA thread is a fiber,
blocks run in parallel on every core this process may use, and memory, barrier and race
mistakes are found and reported with their thread, block and line. Speed is not scored
here."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from grader import ahead, machine
from grader.backends.base import Backend, BackendUnavailable
from grader.backends.cpu import blame, diagnose, runner, shim
from grader.backends.cpu import build as building
from grader.backends.cpu import profile as profiling
from grader.backends.cpu.job import PASSES, Report, Settings, Stop, execute
from grader.backends.cpu.protocol import Error, Fault, Pass, Sandbox
from grader.backends.cpu.shelf import Shelf
from grader.errors import SetupError
from grader.model.interface import MAX_STATIC_SHARED, MAX_THREADS_PER_BLOCK, LaunchDefaults
from grader.model.launch import Buffer, Build, Launch, RunOutcome, read_in_either
from grader.model.occupancy import occupancy
from grader.model.profile import KernelProfile
from grader.model.result import Diagnostic, Kind, RaceScope
from grader.model.source import Submission
from grader.toolchain import cxx, nvcc, sandbox, scratch

T = TypeVar("T")

MAX_DYNAMIC_SHARED = 227 * 1024
MAX_GRID_YZ = 65535
MAX_CONSTANT = 64 * 1024
CONTROL_KERNEL = "grader_control"
# The most builds a lab's cases need: conv2d-clamp's, plain at three mask widths and
# census at two.
BUILDS_AT_ONCE = 5


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, jobs: int | None = None, allow_unsandboxed: bool = False):
        super().__init__()
        self.jobs = max(1, jobs or machine.cores())
        self.allow_unsandboxed = allow_unsandboxed
        self._controls: dict[int, building.Artifact] = {}  # arity -> the grader's module
        # module -> how it was built, for the build with load hooks a hazard run needs
        self._made: dict[Path, tuple[Submission, dict[str, int], LaunchDefaults]] = {}
        # modules whose block's race was sought, each with the launch it was sought in
        # and what that run found, for a run of that launch again (run_in_grid_order)
        self._hazards_sought: dict[Path, tuple[bytes, Report, diagnose.Locator] | None] = {}
        self._shelf = Shelf()  # each module once, linked into every job folder
        self._stop = Stop()  # the workers of the runs made ahead now
        self._closing = Stop()  # every worker, ended at close (Settings.closing)
        scratch.sweep()  # what graders killed before us (a batch's timed-out workers) left

    def close(self) -> None:
        self._closing.stop()
        self._shelf.close()
        scratch.settle()  # the cases' folders, removed meanwhile

    def prepare(self) -> None:
        """The compilers' sandbox, the runner and the shim's two precompiled headers, each
        built once per machine, made at once."""
        census_shim = functools.partial(shim.precompiled_shim, census=True)
        makes = (sandbox.executable, runner.executable, shim.precompiled_shim, census_shim)
        made = [ahead.in_background(make) for make in makes]
        for future in made:
            future.result()

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        raise BackendUnavailable(
            "the CPU backend already checks every case for accesses out of bounds, races "
            "and barrier problems."
        )

    def device(self) -> str:
        total = os.cpu_count() or 1
        plural = "s" if max(self.jobs, total) > 1 else ""
        used = f"{self.jobs} of {total}" if self.jobs < total else f"{self.jobs}"
        used += f" core{plural}"
        judge = f"nvcc {nvcc.version()}" if nvcc.find() else "no nvcc"  # which judged the file
        return (
            f"CPU: {used} used ({platform.machine()}), "
            f"{cxx.compiler().version}, {judge}; speed is not scored on the CPU"
        )

    def sandbox_report(self) -> str:
        """Which sandbox layers are active for student code on this machine."""
        layers = sandbox.probe()
        text = layers.describe()
        missing = layers.missing()
        return f"{text}. {missing}" if missing else text

    def watches_races(self) -> bool:
        """The census run, on one pool thread in the module built with load hooks, turns
        on runtime/hazards.cpp (run)."""
        return True

    def concurrent_builds(self) -> int:
        """A build is compilers in processes of their own, nvcc's in a row beside g++'s,
        and each ends in a tail (ptxas, then the grader's reading of it) that leaves a core
        idle: on more than one core, a grading makes its builds at once, as many as
        BUILDS_AT_ONCE or one more than cores (every lab's reference, cold, on 2 cores:
        17.1-17.4 s with one more than cores, 16.2-16.3 s with BUILDS_AT_ONCE). One core
        makes one at a time."""
        return max(self.jobs + 1, BUILDS_AT_ONCE) if self.jobs > 1 else 1

    def concurrent_runs(self) -> int:
        """A case's own work, in the grader and in the worker's start, is one core's, and
        most cases' kernels take less: a second case's run fills the other cores (every
        lab's reference on 2 cores, warm: 6.2-6.9 s -> 5.5-5.7 s; cold: 16.8-17.3 s ->
        15.1-15.6 s)."""
        return 2 if self.jobs > 1 else 1

    def run_ahead(self, build: Build, launch: Launch, timeout: float) -> RunOutcome | None:
        """None where the run shows the module's first race among threads, which `run`
        locates in the case that comes first; or where it timed out: the timeout counts
        the CPU time the kernel worked, which another run beside it does not change, but
        a kernel that waits is stopped by the wall clock (runtime/signals.cpp), which
        does, so the run in turn says whether it hung."""
        return _ahead(lambda: self._launch(build, launch, timeout, self._stop), lambda o: o)

    def run_in_grid_order(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        """On one pool thread, which runs the blocks in grid order: the findings every
        grading on any number of cores makes (tests/test_determinism.py)."""
        return self._launch(build, launch, timeout, None, in_order=True)

    def stop_runs(self) -> None:
        stopping, self._stop = self._stop, Stop()
        stopping.stop()

    def build(
        self,
        submission: Submission,
        macros: dict[str, int],
        launch_defaults: LaunchDefaults,
        census: bool = False,
    ) -> Build:
        """Atomics are always counted; shared-memory loads only with `census`. With more
        than one core, the C++ compile overlaps nvcc's."""
        self.note(sandbox.compile_isolation(self.allow_unsandboxed))
        self.note(nvcc.missing_note())
        made = building.build(submission, macros, launch_defaults, census, self.jobs > 1)
        if isinstance(made.artifact, building.Artifact):
            self._made[made.artifact.module] = (submission, macros, launch_defaults)
        return made

    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        """Each kernel of the launch in a worker of its own, in order, each on the
        buffers and __device__ values the previous one left (a worker's passes start
        from the same contents); the first from the module's load-time values. So it is
        on a GPU, where the module stays loaded and every run starts from those values."""
        return self._launch(build, launch, timeout, None)

    def profile(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]]:
        """`run`, on the build with load hooks (`build` where it is one; else built here,
        from the same source, as a census build), each block of the first pass on one
        pool thread with its loads, stores and atomics grouped into warp-level requests
        (runtime/profile.cpp). With the outcome, which also counts what each kernel
        executed, each kernel's profile, its occupancy from ptxas's figures where nvcc
        gave them; a kernel whose run did not go to its end has none."""
        return self._profile(build, launch, timeout, None)

    def profile_ahead(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]] | None:
        """As run_ahead: None where the run shows a race to locate, or timed out."""
        return _ahead(lambda: self._profile(build, launch, timeout, self._stop), lambda m: m[0])

    def _profile(
        self, build: Build, launch: Launch, timeout: float, stop: Stop | None
    ) -> tuple[RunOutcome, list[KernelProfile]]:
        if not build.ok or not isinstance(build.artifact, building.Artifact):
            raise ValueError("profile() needs a successful build from this backend")
        hooked = self._hooked(build.artifact)
        if hooked is None:  # the census build failed where the plain one did not
            return self._launch(build, launch, timeout, stop), []
        profiles: list[KernelProfile] = []
        on = dataclasses.replace(build, artifact=hooked)
        outcome = self._launch(on, launch, timeout, stop, profiles)
        return outcome, profiling.merged(profiles)

    def _hooked(self, artifact: building.Artifact) -> building.Artifact | None:
        """`artifact`, or the module of its census build: the one whose loads are hooked;
        None where that could not be built."""
        made = self._made.get(artifact.module)
        if artifact.census or made is None:
            return artifact if artifact.census else None
        built = building.build(*made, census=True)
        if not isinstance(built.artifact, building.Artifact):
            return None
        self._made[built.artifact.module] = made
        return built.artifact

    def _launch(
        self,
        build: Build,
        launch: Launch,
        timeout: float,
        stop: Stop | None,
        profiles: list[KernelProfile] | None = None,
        in_order: bool = False,
    ) -> RunOutcome:
        """`run`; with `stop`, a run made ahead, whose workers `stop` may end; with
        `profiles`, a profiled run, each kernel's profile added to it; `in_order`, on one
        pool thread."""
        if not build.ok or not isinstance(build.artifact, building.Artifact):
            raise ValueError("run() needs a successful build from this backend")
        contents = {b.name: b.data for b in launch.buffers()}
        state: dict[str, bytes] | None = {} if launch.then else None
        total: RunOutcome | None = None
        for step in launch.steps:
            on = _on(step, contents)
            outcome = self._run_step(build, on, timeout, state, stop, profiles, in_order)
            total = outcome if total is None else _chained(total, outcome)
            if not outcome.completed:
                break
            contents.update({name: state.data for name, state in outcome.buffers.items()})
        return total

    def _run_step(
        self,
        build: Build,
        launch: Launch,
        timeout: float,
        state: dict[str, bytes] | None,
        stop: Stop | None,
        profiles: list[KernelProfile] | None = None,
        in_order: bool = False,
    ) -> RunOutcome:
        """`state` (a launch of several kernels) holds the __device__ values the step
        starts from, and then those it left; `profiles` gets the step's kernel's profile,
        where it is profiled and its run went to its end."""
        problems = _launch_problems(build, launch)
        if problems:
            return RunOutcome(diagnostics=problems, crashed=True)
        artifact = build.artifact
        if launch.kernel not in artifact.codes:
            why = artifact.dropped.get(launch.kernel)
            detail = f" The C++ compiler could not register it: {why}" if why else ""
            return RunOutcome(
                diagnostics=[
                    Diagnostic(
                        Kind.INTERFACE,
                        f"The CPU backend found no kernel named {launch.kernel} it can "
                        f"launch.{detail}",
                        kernel=launch.kernel,
                    )
                ],
                crashed=True,
            )
        # A census module's run watches races among a block's threads and may be
        # profiled, on one pool thread, and clang++'s census build may leave the store of
        # a read-modify-write (bins[v]++) unhooked (shim.py): its blocks run in grid order
        # from the start, as every block does where stores show order to matter (the
        # census case is the smallest public one)
        jobs = 1 if artifact.census or in_order else self.jobs
        isolated = self._require_isolation()
        # a census run also watches every access that races among a block's threads
        settings = Settings(
            jobs,
            isolated,
            hazards=artifact.census,
            profile=profiles is not None,
            stop=stop,
            closing=self._closing,
        )
        start = dict(state) if state is not None else None
        report = execute(artifact, launch, timeout, settings, self._shelf, state)
        if jobs > 1 and _order_dependent(report):
            settings = dataclasses.replace(settings, jobs=1)
            report = execute(artifact, launch, timeout, settings, self._shelf, state)
        if state is not None:
            state.update(report.state)
        self._note_layers(report)
        try:
            missing = sandbox.probe().missing()
            out = diagnose.outcome(report, artifact, self._shelf, launch, timeout, missing)
        except blame.Unexplained as err:
            self._check_machine(launch, timeout, settings)
            return RunOutcome(
                diagnostics=[blame.submission_crash(err, launch.kernel)], crashed=True
            )
        out.blocks_at_once = settings.jobs > 1
        self._locate_race(out, artifact, launch, timeout, settings, start)
        if profiles is not None and out.completed:
            self._add_profile(profiles, report, build, launch)
        return out

    @staticmethod
    def _add_profile(
        profiles: list[KernelProfile], report: Report, build: Build, launch: Launch
    ) -> None:
        """The profile of the run's kernel, with its occupancy, onto `profiles`."""
        threads = math.prod(launch.block)
        found = profiling.read(report, launch.kernel, threads * math.prod(launch.grid))
        if found is None:
            return
        resources = build.compile.kernels.get(launch.kernel)
        if resources is not None:
            found.occupancy = occupancy(resources, threads, launch.shared_bytes)
        profiles.append(found)

    def _locate_race(
        self,
        out: RunOutcome,
        artifact: building.Artifact,
        launch: Launch,
        timeout: float,
        settings: Settings,
        state: dict[str, bytes] | None,
    ) -> None:
        """The first race among a block's threads a module shows outside the census run
        (which watched its accesses itself): run that case again to find the accesses
        that race (runtime/hazards.cpp), in the module built with load hooks, and name
        their threads and lines. Once per module, since each case costs an instrumented
        run and the race reaches every case; but where it turned out to be two threads
        storing into one element (RaceScope.STORES: that case's alone), the next case
        that shows a race is looked into too, or its race, left unexplained, would reach
        every case."""
        race = next((d for d in out.diagnostics if d.race_scope == RaceScope.EVERY_CASE), None)
        made = self._made.get(artifact.module)
        if race is None or made is None or artifact.census:
            return
        key = _launched(launch, state)
        sought = self._hazards_sought.get(artifact.module, False)
        if sought is not False and (sought is None or sought[0] != key):
            return
        if sought is False and settings.stop is not None:  # an earlier case may race too
            raise _InTurn
        hooked = self._hooked(artifact)
        if hooked is None:
            self._hazards_sought[artifact.module] = None
            return
        if sought:
            _, report, locate = sought
        else:
            seek = dataclasses.replace(settings, jobs=1, hazards=True, profile=False)
            report = execute(hooked, launch, timeout, seek, self._shelf, state)
            locate = diagnose.Locator(hooked, self._shelf)
        if any(r.crossed for r in report.all(Pass)):  # its loads are watched
            out.blocks_read_each_other = True
        at = out.diagnostics.index(race)
        found = diagnose.explained(race, report, launch, locate)
        out.diagnostics[at : at + 1] = found
        if any(d.race_scope == RaceScope.EVERY_CASE for d in found):
            self._hazards_sought[artifact.module] = (key, report, locate)

    def _note_layers(self, report: Report) -> None:
        """The layers its worker applied, as the worker recorded them before any code of
        the submission ran: in every report where one is missing (no namespaces here, or
        no isolation at all, allowed by --allow-unsandboxed), else only for -v (to a
        student it is jargon)."""
        record = report.first_setup(Sandbox)
        if record is not None:
            layers = record.layers
            whole = layers.landlock and layers.seccomp and layers.netns
            self.note(f"The CPU backend's sandbox: {layers.describe()}.", detail=whole)

    def _check_machine(self, launch: Launch, timeout: float, settings: Settings) -> None:
        """The control run: the same launch, in the same sandbox, of the grader's own
        module instead of the submission's. Raises SetupError if that fails too."""
        arity = len(launch.args)
        if arity not in self._controls:
            self._controls[arity] = _control_module(arity)
        same = dataclasses.replace(launch, kernel=CONTROL_KERNEL, constants={})
        report = execute(self._controls[arity], same, timeout, settings, self._shelf)
        if not (report.loaded and report.returncode == 0 and len(report.outputs) == PASSES):
            raise SetupError(blame.control_failed(report))

    def _require_isolation(self) -> bool:
        layers = sandbox.probe()
        missing = layers.missing()
        if not missing:
            return True
        if not self.allow_unsandboxed:
            raise SetupError(missing)
        self.note(
            "Student code ran with incomplete sandboxing on the CPU backend "
            f"(allowed by --allow-unsandboxed): {layers.describe()}."
        )
        return False


class _InTurn(Exception):
    """A run made ahead that only a run in turn may make."""


def _ahead(make: Callable[[], T], outcome: Callable[[T], RunOutcome]) -> T | None:
    """What `make` made ahead, or None where only a run in turn may make it (a race to
    locate) or its run timed out (the run in turn says whether it hung)."""
    try:
        made = make()
    except _InTurn:
        return None
    return None if outcome(made).timed_out else made


def _control_module(arity: int) -> building.Artifact:
    """The grader's own module, built as a submission is: a kernel of `arity` parameters
    that does nothing, and a function that needs the C++ and maths libraries, so that the
    module needs every library a submission can."""
    params = ", ".join(f"float* a{i}" for i in range(arity))
    text = (
        f"__global__ void {CONTROL_KERNEL}({params}) {{}}\n"
        'extern "C" float grader_control_libraries(float x) {\n'
        "    if (x > 1e30f) throw 1;\n"
        "    return erff(x);\n"
        "}\n"
    )
    build = building.build(Submission(Path(f"{CONTROL_KERNEL}.cu"), text), {}, (1, 1, 1))
    if not build.ok or not isinstance(build.artifact, building.Artifact):
        raise SetupError(
            f"The CPU backend could not build its own control module: {build.compile.log[:500]}"
        )
    return build.artifact


def _order_dependent(report: Report) -> bool:
    """Whether what a run found depends on which pool thread ran which block: blocks
    stored into one element (runtime/stores.cpp), or a block faulted, and which one
    faulted first was a matter of timing; or a pool thread's parked blocks kept their
    share of memory for stacks (runtime/scheduler.cpp's park). One pool thread runs the
    blocks in grid order, so its findings are the same in every grading; a record that
    asks for it (the submission's own, perhaps) costs only that run. Blocks that read
    each other's stores are grader.grading.grid_order's."""
    conflicts = any(r.conflicts for r in report.all(Pass))
    error = report.first(Error)
    parking = error is not None and error.what == "parking"
    return conflicts or parking or report.first(Fault) is not None


def _launched(launch: Launch, state: dict[str, bytes] | None) -> bytes:
    """A digest of what a launch starts from: its shape, scalars, buffers and __device__
    values."""
    digest = hashlib.blake2b(repr((launch.kernel, launch.grid, launch.block)).encode())
    for a in launch.args:
        digest.update(memoryview(a.data).cast("B") if isinstance(a, Buffer) else repr(a).encode())
    for name, value in sorted((state or {}).items()):
        digest.update(name.encode() + value)
    return digest.digest()


def _on(step: Launch, contents: dict) -> Launch:
    """`step` alone, its buffers holding `contents` (by name)."""
    args = [
        dataclasses.replace(a, data=contents[a.name]) if isinstance(a, Buffer) else a
        for a in step.args
    ]
    return dataclasses.replace(step, args=args, then=[])


def _chained(before: RunOutcome, after: RunOutcome) -> RunOutcome:
    """What two kernels in a row did: the later buffers, both sets of findings, and the
    canaries either overwrote."""
    for name, state in after.buffers.items():
        earlier = before.buffers.get(name)
        if earlier is not None:
            state.written_before += earlier.written_before
            state.written_after += earlier.written_after
            if earlier.first_after is not None:
                state.first_after = earlier.first_after
    known = {(d.kind, d.message) for d in before.diagnostics}
    after.diagnostics = before.diagnostics + [
        d for d in after.diagnostics if (d.kind, d.message) not in known
    ]
    after.output = before.output + after.output
    after.seconds += before.seconds
    after.blocks_at_once = after.blocks_at_once or before.blocks_at_once
    after.blocks_read_each_other = read_in_either(
        before.blocks_read_each_other, after.blocks_read_each_other
    )
    for kernel, counts in before.executed.items():
        later = after.executed.get(kernel)
        after.executed[kernel] = counts if later is None else counts.plus(later)
    if not after.completed:
        after.buffers = {}
    return after


def _launch_problems(build: Build, launch: Launch) -> list[Diagnostic]:
    """What a GPU would refuse to launch at all."""
    k = launch.kernel
    out = []
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    shape = "x".join(str(v) for v in launch.block)
    if min(launch.block) < 1 or min(launch.grid) < 1:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"The launch of {k} has an empty grid or block: grid "
                f"{'x'.join(map(str, launch.grid))}, block {shape}.",
                kernel=k,
            )
        )
        return out
    if threads > MAX_THREADS_PER_BLOCK or launch.block[2] > 64:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"A block of {shape} = {threads} threads is more than a GPU allows "
                f"({MAX_THREADS_PER_BLOCK} threads, at most 64 along z).",
                kernel=k,
            )
        )
    sig = build.interface.kernels.get(k) if build.interface else None
    if sig and sig.max_threads and threads > sig.max_threads:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"{k} is declared __launch_bounds__({sig.max_threads}), but it is launched "
                f"with blocks of {shape} = {threads} threads.",
                kernel=k,
            )
        )
    if launch.grid[1] > MAX_GRID_YZ or launch.grid[2] > MAX_GRID_YZ:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"A grid of {'x'.join(map(str, launch.grid))} blocks has more than "
                f"{MAX_GRID_YZ} blocks along y or z.",
                kernel=k,
            )
        )
    static = sig.resources.shared_bytes if sig and sig.resources else 0
    if static > MAX_STATIC_SHARED:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"{k} declares {static} bytes of static shared memory; a block may have at "
                f"most {MAX_STATIC_SHARED} (48 KB).",
                kernel=k,
            )
        )
    if (
        launch.shared_bytes > MAX_DYNAMIC_SHARED
        or static + launch.shared_bytes > MAX_DYNAMIC_SHARED
    ):
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"{k} is launched with {launch.shared_bytes} bytes of dynamic shared memory "
                f"(and {static} static); a block may have at most {MAX_DYNAMIC_SHARED} (227 KB).",
                kernel=k,
            )
        )
    constant = sum(c.size for c in build.interface.constants.values() if c.space == "const")
    if constant > MAX_CONSTANT:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"The __constant__ variables take {constant} bytes; constant memory holds "
                f"{MAX_CONSTANT} (64 KB).",
                kernel=k,
            )
        )
    return out
