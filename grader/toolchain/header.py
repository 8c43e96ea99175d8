"""C++ headers written from Python tables of plain data, so that a number or a word that
the grader and a program of its own both use is written once: the grader reads the table,
and the program's build (grader.toolchain.cxx.build_program) writes the header beside its
objects. What a header holds: enums of named numbers, constants, and the words of a job
file or a command line with how many times each may come (keys.h, beside the sandbox's
sources, reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

# How many times a job file or a command line has a word: (least, most), most -1 for any.
ONCE, AT_MOST_ONCE, ANY = (1, 1), (0, 1), (0, -1)


def enum(name: str, prefix: str, members: type[IntEnum]) -> list[str]:
    """`enum name`, with PREFIX_MEMBER for each member."""
    return [f"enum {name} {{", *(f"    {prefix}_{m.name} = {m.value}," for m in members), "};"]


def words(name: str, prefix: str, rules: Mapping[str, tuple[int, int]]) -> list[str]:
    """An enum `name` of the words (PREFIX_WORD: the word in capitals, without its leading
    dashes, a dash as _), their number PREFIX_COUNT, and PREFIX_RULES: the KeyRule of each
    (keys.h), in the enum's order."""
    members = [f"    {prefix}_{word_name(w)}," for w in rules]
    table = [f'    {{"{w}", {least}, {most}}},' for w, (least, most) in rules.items()]
    return [
        f"enum {name} {{",
        *members,
        "};",
        f"constexpr int {prefix}_COUNT = {len(rules)};",
        f"constexpr KeyRule {prefix}_RULES[{prefix}_COUNT] = {{",
        *table,
        "};",
    ]


def word_name(word: str) -> str:
    """A word's name in an enum of words: `--require-files` is REQUIRE_FILES."""
    return word.lstrip("-").replace("-", "_").upper()


def document(guard: str, table: str, includes: list[str], body: list[str]) -> str:
    """The header: a note that `table` (a module's path) is what to edit, an include
    guard, `includes`, and `body` in namespace rt."""
    return "\n".join(
        [
            f"/* Written from {table} when the program is built: edit that, not this. */",
            f"#ifndef {guard}",
            f"#define {guard}",
            "",
            *(f"#include {i}" for i in includes),
            "",
            "namespace rt {",
            "",
            *body,
            "",
            "}  // namespace rt",
            "",
            "#endif",
            "",
        ]
    )
