"""The grader package's house, drawn from its imports: floors, imports that climb, circles.

Run from the repository root:

    python tools/imports.py            # the whole picture
    python tools/imports.py --brief    # the figures only

What the words mean here (tests/test_imports.py holds the package to them):

- A *room* is one entry at the top of grader/: a module (`grader/errors.py`) or a folder with
  everything below it (`grader/backends/`).
- An *import* is every `import`/`from ... import` of a grader module anywhere in a file, at its
  top or inside a function: a lazy import is still a dependency.
- A module's *height* is the longest chain of imports below it (modules that import one another
  in a circle count as one); a room's height is its highest module's.
- An import *climbs* when it joins two rooms that reach each other through imports and goes
  from a room to one at least as high. Those imports are what stops the rooms from standing on
  one another; every circle of rooms has at least one.
- The *floors* stack the rooms once the climbing imports are set aside: a room that imports no
  other room is on floor 0, any other one floor above the highest room it imports.
- A *circle* is a set of modules that import one another round.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "grader"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int


@dataclass
class House:
    modules: set[str]
    imports: list[Import]
    edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def __post_init__(self) -> None:
        for imp in self.imports:
            if imp.source != imp.target:
                self.edges[imp.source].add(imp.target)

    def room(self, module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else "__init__"

    def rooms(self) -> set[str]:
        return {self.room(m) for m in self.modules}

    def circles(self) -> list[list[str]]:
        """Sets of modules that import one another round, each sorted, largest first."""
        found = [sorted(c) for c in _components(self.modules, self.edges) if len(c) > 1]
        return sorted(found, key=lambda c: (-len(c), c))

    def heights(self) -> dict[str, int]:
        """Each room's height: its highest module's longest chain of imports below it."""
        components = _components(self.modules, self.edges)
        where = {m: i for i, c in enumerate(components) for m in c}
        down: dict[int, set[int]] = defaultdict(set)
        for a, targets in self.edges.items():
            down[where[a]] |= {where[b] for b in targets if where[b] != where[a]}
        height = _longest(range(len(components)), down)
        rooms: dict[str, int] = defaultdict(int)
        for m in self.modules:
            rooms[self.room(m)] = max(rooms[self.room(m)], height[where[m]])
        return dict(rooms)

    def room_edges(self) -> dict[str, set[str]]:
        edges: dict[str, set[str]] = defaultdict(set)
        for a, targets in self.edges.items():
            edges[self.room(a)] |= {self.room(b) for b in targets} - {self.room(a)}
        return edges

    def climbing(self) -> list[Import]:
        """The imports that climb, one for each module that imports another, in file order."""
        edges = self.room_edges()
        heights = self.heights()
        together = {r: i for i, c in enumerate(_components(self.rooms(), edges)) for r in c}
        climbs: dict[tuple[str, str], Import] = {}
        for imp in sorted(self.imports, key=lambda i: (i.source, i.line)):
            a, b = self.room(imp.source), self.room(imp.target)
            if a != b and together[a] == together[b] and heights[b] >= heights[a]:
                climbs.setdefault((imp.source, imp.target), imp)
        return list(climbs.values())

    def floors(self) -> dict[str, int]:
        """Each room's floor, once the climbing imports are set aside."""
        climbs = {(self.room(i.source), self.room(i.target)) for i in self.climbing()}
        edges = {a: {b for b in bs if (a, b) not in climbs} for a, bs in self.room_edges().items()}
        return _longest(self.rooms(), edges)

    def importers(self, room: str) -> set[str]:
        """The rooms other than `room` that import a module in it."""
        return {
            self.room(i.source)
            for i in self.imports
            if self.room(i.target) == room and self.room(i.source) != room
        }


def read(root: Path = ROOT, package: str = PACKAGE) -> House:
    """Every grader import, read from the source without running it."""
    files = {_dotted(p.relative_to(root)): p for p in sorted((root / package).rglob("*.py"))}
    modules = set(files)
    imports = []
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            for target, line in _targets(node, here, modules):
                imports.append(Import(name, target, line))
    return House(modules, imports)


def _dotted(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, package: str, modules: set[str]) -> list[tuple[str, int]]:
    """The grader modules one import statement names."""
    if isinstance(node, ast.Import):
        names = [_known(a.name, modules) for a in node.names]
        return [(n, node.lineno) for n in names if n]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(up + ([base] if base else []))
    found = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        name = sub if sub in modules else _known(base, modules)
        if name:
            found.append((name, node.lineno))
    return found


def _known(dotted: str, modules: set[str]) -> str | None:
    """The longest grader module `dotted` names (`import a.b.c` names a.b.c, else a.b)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def _components(nodes, edges) -> list[set]:
    """Strongly connected components (Tarjan), without recursion."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found = []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.add(top)
                        if top == node:
                            break
                    found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _longest(nodes, edges) -> dict:
    """Each node's longest path down an acyclic graph: 0 for a node with no edges."""
    depth: dict = {}
    for start in nodes:
        work = [start]
        while work:
            node = work[-1]
            if node in depth:
                work.pop()
                continue
            below = [b for b in edges.get(node, ()) if b not in depth]
            if below:
                work.extend(below)
                continue
            depth[node] = 1 + max((depth[b] for b in edges.get(node, ())), default=-1)
            work.pop()
    return depth


def figures(house: House) -> str:
    floors = house.floors()
    return (
        f"{len(house.modules)} modules in {len(house.rooms())} rooms on "
        f"{max(floors.values()) + 1} floors; {len(house.climbing())} climbing imports; "
        f"{len(house.circles())} circles"
    )


def report(house: House) -> str:
    lines = [figures(house), "", "floors (top first):"]
    floors = house.floors()
    for level in range(max(floors.values()), -1, -1):
        rooms = sorted(r + "/" * _is_folder(house, r) for r in floors if floors[r] == level)
        lines.append(f"  {level:2}  {' '.join(rooms)}")
    lines += ["", "climbing imports:"]
    climbs = [f"  {i.source} -> {i.target} (line {i.line})" for i in house.climbing()]
    lines += climbs or ["  none"]
    lines += ["", "circles:"]
    lines += [f"  {' <-> '.join(c)}" for c in house.circles()] or ["  none"]
    return "\n".join(lines)


def _is_folder(house: House, room: str) -> bool:
    return f"{PACKAGE}.{room}" in house.modules and any(
        m.startswith(f"{PACKAGE}.{room}.") for m in house.modules
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brief", action="store_true", help="print the figures only")
    args = parser.parse_args(argv)
    house = read()
    print(figures(house) if args.brief else report(house))
    return 0


if __name__ == "__main__":
    sys.exit(main())
