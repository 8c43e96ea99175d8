"""The course's settings: from the command line, the environment, a config file, or the
defaults, in that order of precedence, as ruff and pytest users expect.

The file is the one named with --config or GRADER_CONFIG, else the nearest `grader.toml`
(its keys at the top level) or `pyproject.toml` with a `[tool.grader]` table, looking
from the working folder up; paths in it are relative to its folder. It may set the lab
roots, jobs, timeouts, backend, colour and output folder. A file found rather than named
may be a student's (grader.cli.trust): unless it lies outside what is graded, only the
setting that cannot change a grade, colour, applies, and a note on standard error says
which were ignored and why. The secret is never read from a file (a course repository
is shared and committed): only --secret and GRADER_SECRET give it, and it is never
printed. The lab roots add up rather than override, as they always have: --labs adds to
GRADER_LABS, or to the file's `labs` when GRADER_LABS is not set.

A setting applies to the commands whose option has no default of its own (None): the
file's backend is check's and batch's, not gradescope's, whose default is the CPU."""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import defaults, labs
from grader.cli.args import painter, positive_int, seconds_up_to
from grader.cli.trust import Graded, refusal
from grader.errors import UsageError
from grader.labs import ENV as LABS_ENV
from grader.suggest import did_you_mean

ENV = "GRADER_CONFIG"  # names the course's file, as --config does
NAME_IT = f"A course's own file decides grades when named: --config PATH or {ENV}=PATH."
FILE = "grader.toml"
PYPROJECT = "pyproject.toml"
BACKENDS = ("auto", "cuda", "cpu")
COLORS = ("auto", "always", "never")


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            listed = ", ".join(choices)
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {listed}")
        return text

    return parse


@dataclass(frozen=True)
class Setting:
    name: str  # the key in the file, and the option's dest
    env: str | None  # the environment variable that sets it
    parse: Callable[[str], Any]  # text to value; raises argparse.ArgumentTypeError
    default: Any
    what: str  # the commands it applies to
    unset: str = ""  # what a default of None means
    path: bool = False  # a path: relative to the file's folder when the file gives it
    looks: bool = False  # changes only how output looks, never a grade (a new one: False)


SETTINGS = (
    Setting("backend", "GRADER_BACKEND", _choice(BACKENDS), "auto", "check and batch"),
    Setting("color", None, _choice(COLORS), "auto", "every command", looks=True),
    # jobs decides grades: deadlines are wall-clock, and more jobs than the machine has
    # cores or memory for can time out an honest kernel
    Setting("jobs", "GRADER_JOBS", positive_int, None, "batch", "as the CPUs and memory allow"),
    # so does out: a batch keeps the grades recorded in its out folder
    Setting("out", "GRADER_OUT", str, None, "batch and merge", "none: give --out", path=True),
    Setting(
        "submission_timeout",
        "GRADER_SUBMISSION_TIMEOUT",
        seconds_up_to(defaults.MAX_SUBMISSION_TIMEOUT),
        None,
        "check and batch",
        "each compile and case at its own limit",
    ),
    Setting(
        "timeout",
        "GRADER_TIMEOUT",
        seconds_up_to(defaults.MAX_CASE_TIMEOUT),
        defaults.CASE_TIMEOUT,
        "check, batch and validate-lab",
    ),
)
LABS = "labs"  # a list of folders, which adds up (the module's docstring)
KEYS = (LABS, *(s.name for s in SETTINGS))
LOOKS = tuple(s.name for s in SETTINGS if s.looks)  # what any file may set
SECRET_KEYS = ("secret", defaults.SECRET_ENV.lower(), defaults.SECRET_ENV)


@dataclass(frozen=True)
class Value:
    value: Any
    source: str  # "--jobs", "GRADER_JOBS", the file's path, or "default"


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    values: dict[str, Any]  # all it sets, validated, paths resolved
    how: str = "named"  # "named with --config", "named by GRADER_CONFIG", or how it was found
    refused: str | None = None  # why it may not decide a grade; None when it may

    @property
    def ignored(self) -> list[str]:
        """The keys it sets that decide a grade, which a refused file may not."""
        return [] if self.refused is None else [k for k in self.values if k not in LOOKS]

    @property
    def applied(self) -> dict[str, Any]:
        return {k: v for k, v in self.values.items() if k not in self.ignored}


def find(start: Path) -> Path | None:
    """The nearest grader.toml, or pyproject.toml with [tool.grader], from `start` up."""
    for folder in [start, *start.parents]:
        if (folder / FILE).is_file():
            return folder / FILE
        if (folder / PYPROJECT).is_file() and "grader" in _tools(folder / PYPROJECT):
            return folder / PYPROJECT
    return None


def _tools(path: Path) -> dict[str, Any]:
    tool = _read(path).get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: the config file could not be read: {error}.") from error
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: the config file is not valid TOML: {error}.") from error


def load(path: Path, how: str = "named", refused: str | None = None) -> ConfigFile:
    """The settings of the config file at `path`, checked. Raises UsageError naming the file
    and the key for an unknown key, a secret, or a value that the option would refuse."""
    table = _tools(path).get("grader", {}) if path.name == PYPROJECT else _read(path)
    where = f"{path} ([tool.grader])" if path.name == PYPROJECT else str(path)
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [tool.grader] must be a table of settings.")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        if key in SECRET_KEYS:
            raise UsageError(
                f"{where} sets {key}: the secret is never read from a file, which would be "
                f"shared with the course's repository. Set {defaults.SECRET_ENV} in the "
                "environment instead, and remove it from the file."
            )
        if key not in KEYS:
            guess = did_you_mean(key, KEYS)
            raise UsageError(
                f"{where}: there is no setting {key!r}.{guess} Settings: {', '.join(KEYS)}."
            )
        values[key] = _file_value(where, path.parent, key, raw)
    return ConfigFile(path, values, how, refused)


def _file_value(where: str, folder: Path, key: str, raw: Any) -> Any:
    if key == LABS:
        roots = [raw] if isinstance(raw, str) else raw
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise UsageError(f"{where}: labs is a folder or a list of folders, not {raw!r}.")
        return [str(folder / Path(r).expanduser()) for r in roots]
    setting = next(s for s in SETTINGS if s.name == key)
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise UsageError(f"{where}: {key} = {raw!r} is not a value {key} takes.")
    try:
        value = setting.parse(str(raw))
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{where}: {key} = {raw!r}: {error}.") from None
    return str(folder / Path(value).expanduser()) if setting.path else value


def _from_env(setting: Setting, env: Mapping[str, str]) -> Value | None:
    if setting.name == "color":  # no-color.org and force-color.org; NO_COLOR wins
        if env.get("NO_COLOR"):
            return Value("never", "NO_COLOR")
        return Value("always", "FORCE_COLOR") if env.get("FORCE_COLOR") else None
    text = env.get(setting.env or "")
    if not text:
        return None
    try:
        return Value(setting.parse(text), setting.env)
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{setting.env}={text}: {error}.") from None


def resolve(
    args: argparse.Namespace, env: Mapping[str, str], file: ConfigFile | None
) -> dict[str, Value]:
    """Each setting the command has (an option whose value is None when not given), from
    its flag, else the environment, else the file, else the default."""
    found: dict[str, Value] = {}
    for setting in SETTINGS:
        if not hasattr(args, setting.name):
            continue
        given = getattr(args, setting.name)
        flag = f"--{setting.name.replace('_', '-')}"
        value = Value(given, flag) if given is not None else _from_env(setting, env)
        if value is None and file is not None and setting.name in file.applied:
            value = Value(file.applied[setting.name], str(file.path))
        found[setting.name] = value or Value(setting.default, "default")
    return found


def file_roots(env: Mapping[str, str], file: ConfigFile | None) -> list[str]:
    """The file's lab roots, which count only while GRADER_LABS is not set."""
    if env.get(LABS_ENV) or file is None:
        return []
    return list(file.applied.get(LABS, []))


def apply(args: argparse.Namespace) -> None:
    """Fill in `args` the settings its command has, and add the file's lab roots; say on
    standard error which settings of the file were ignored, and why (`grader config`
    says it on standard output instead). The file is kept as `args.config_file`."""
    file = args.config_file = chosen(args, os.environ)
    for name, value in resolve(args, os.environ, file).items():
        setattr(args, name, value.value)
    if file is None:
        return
    labs.add_roots(file_roots(os.environ, file), f"labs in {file.path}")
    if file.ignored and args.run is not run_config:
        from grader.report.common import printable  # the path may be a student's

        print(f"grader: {printable(ignored_note(file))}", file=sys.stderr)


def chosen(args: argparse.Namespace, env: Mapping[str, str]) -> ConfigFile | None:
    """The config file of this command, loaded, with whether it may decide a grade: the
    file named, else the nearest one above the working folder, else None."""
    if args.no_config:
        return None
    if args.config or env.get(ENV):
        how = "named with --config" if args.config else f"named by {ENV}"
        return load(_named(args.config or env[ENV], how), how)
    path = find(Path.cwd())
    if path is None:
        return None
    graded = args.graded(args) if getattr(args, "graded", None) else None
    refused = refusal(path, graded, args.verb)
    how = "found looking up from here" + ("" if refused else ", outside what is graded")
    return load(path, how, refused)


def _named(text: str, how: str) -> Path:
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"The config file {how}, {text}, is not a file.")
    if path.name == PYPROJECT and "grader" not in _tools(path):
        raise UsageError(f"The config file {how}, {text}, has no [tool.grader] table.")
    return path


def ignored_note(file: ConfigFile) -> str:
    """The sentence that says which of the file's settings were not used, and why."""
    return (
        f"{file.path} sets {', '.join(file.ignored)}, which were not used: {file.refused}. "
        + NAME_IT
    )


def _shown(setting: Setting, value: Any) -> str:
    if value is None:
        return setting.unset
    return f"{value:g}" if isinstance(value, float) else str(value)


def report(
    env: Mapping[str, str], file: ConfigFile | None, flag_roots: list[str]
) -> list[tuple[str, str, str]]:
    """(setting, value, source) rows for `grader config`: every setting as a command with
    no flags would resolve it, the lab roots, the build cache, and whether a secret is
    set, which is all it says of the secret."""
    blank = argparse.Namespace(**{s.name: None for s in SETTINGS})
    resolved = resolve(blank, env, file)
    rows = [(s.name, _shown(s, resolved[s.name].value), resolved[s.name].source) for s in SETTINGS]
    listed = [r for r in env.get(LABS_ENV, "").split(os.pathsep) if r]
    roots = [(r, LABS_ENV) for r in listed] + [(r, str(file.path)) for r in file_roots(env, file)]
    roots += [(r, "--labs") for r in flag_roots]
    rows += [(LABS, root, source) for root, source in roots] or [(LABS, "none", "default")]
    cache = "GRADER_CACHE" if env.get("GRADER_CACHE") else "default"
    rows.append(("cache", str(defaults.cache_path()), cache))
    secret = "set, not shown" if env.get(defaults.SECRET_ENV) else "not set"
    rows.append(("secret", secret, f"--secret or {defaults.SECRET_ENV}, never a file"))
    return sorted(rows, key=lambda row: row[0])


# -- the verb ---------------------------------------------------------------------------


def run_config(args: argparse.Namespace) -> int:
    from grader.report.common import printable  # the file's path may be a student's

    for line in file_lines(args.config_file, args.no_config, args.path is None):
        print(printable(line))
    print("Settings (flags > environment > file > default):")
    rows = report(os.environ, args.config_file, args.labs)
    width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    paint = painter(args)
    for name, value, source in rows:
        name = paint(f"{name:{width}}", "bold")
        print(f"  {name}  {printable(value):{value_width}}  {paint(printable(source), 'dim')}")
    return 0


def file_lines(file: ConfigFile | None, no_config: bool, nothing_graded: bool) -> list[str]:
    """What `grader config` says of the config file: which it read, how it chose it, which
    of its settings apply and which were ignored, and why."""
    if file is None:
        return [f"Config file: none{' (--no-config)' if no_config else ''}"]
    lines = [f"Config file: {file.path} ({file.how})"]
    read = [key for key in file.values if key not in file.ignored]
    lines.append(f"  read: {', '.join(read) or 'no setting'}")
    if file.ignored:
        lines.append(f"  ignored: {', '.join(file.ignored)}, since {file.refused}")
        lines.append(f"  {NAME_IT}")
        if nothing_graded:
            lines.append(
                "  `grader config KERNEL` or `grader config SUBMISSIONS` shows what `grader "
                "check` of that kernel, or `grader batch` of that folder, would read here."
            )
    return lines


def _graded(args: argparse.Namespace) -> Graded | None:
    """What `grader config PATH` reads the settings for: `grader check` of a kernel, or
    `grader batch` of a folder of submissions."""
    if args.path is None:
        return None
    return Graded.folder(args.path) if Path(args.path).is_dir() else Graded.kernel(args.path)


def add_config_verb(verbs: argparse._SubParsersAction) -> None:
    """Add `grader config` to the `grader` command."""
    verb = verbs.add_parser(
        "config",
        help="show each setting and where it comes from",
        description="Print which config file a command here reads (the one named with "
        f"--config or {ENV}, else the nearest grader.toml, or pyproject.toml with "
        "[tool.grader]), which of its settings apply and which are ignored, and why; then "
        "each setting (backend, color, jobs, out, submission_timeout, timeout, labs) as "
        "the command would use it, and where it comes from: a flag, the environment, the "
        "file, or the default. The secret is only said to be set or not.",
    )
    verb.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="a kernel, or a folder of submissions: read the settings as `grader check` of "
        "it, or `grader batch` of it, would (default: as a command that grades nothing)",
    )
    verb.set_defaults(run=run_config, graded=_graded)
