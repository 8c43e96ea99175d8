"""A reader for the few parts of a 64-bit little-endian ELF file the CPU backend needs:
symbols with their sizes, the bytes of initialised data, and the libraries a module
needs. The compiled module is described from these alone (the registration footer stores
each kernel's signature as constant data), so describing a submission never runs any of
its code; and the worker loads the libraries before its sandbox closes."""

from __future__ import annotations

import platform
import struct
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SHT_SYMTAB = 2
SHT_NOBITS = 8
SHT_DYNSYM = 11
STT_TLS = 6
STB_WEAK = 2


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int


@dataclass(frozen=True)
class Symbol:
    name: str
    type: int
    section: int
    value: int
    size: int


READ_LIMIT = 1 << 16  # bytes of a symbol read: the grader's descriptors are far smaller

# What reading a truncated or inconsistent file raises: offsets past its end, indices of
# sections or strings it does not have.
_MALFORMED = (struct.error, IndexError, ValueError, OverflowError)


class ElfError(Exception):
    """The file is not an ELF file this reader understands, or a symbol the grader reads
    is not what the grader wrote. The message is a sentence about the module."""


class Elf:
    def __init__(self, path: Path):
        self.data = path.read_bytes()
        if self.data[:4] != b"\x7fELF" or self.data[4:6] != b"\x02\x01":
            raise ElfError(f"{path.name} is not a 64-bit little-endian ELF file.")
        try:
            self._parse()
        except _MALFORMED as error:
            why = f"{path.name} is not an ELF file the grader can read ({error})."
            raise ElfError(why) from None

    def _parse(self) -> None:
        shoff = struct.unpack_from("<Q", self.data, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 0x3A)
        raw = [
            struct.unpack_from("<IIQQQQIIQQ", self.data, shoff + i * shentsize)
            for i in range(shnum)
        ]
        names = raw[shstrndx][4] if raw else 0
        self.sections = [
            Section(self._string(names, r[0]), r[1], r[3], r[4], r[5], r[6]) for r in raw
        ]
        self.symbols = self._symbols()

    def _string(self, table_offset: int, index: int) -> str:
        end = self.data.index(b"\0", table_offset + index)
        return self.data[table_offset + index : end].decode("utf-8", "replace")

    def _symbols(self) -> dict[str, Symbol]:
        tables = [s for s in self.sections if s.type == SHT_SYMTAB]
        tables = tables or [s for s in self.sections if s.type == SHT_DYNSYM]
        out: dict[str, Symbol] = {}
        for table in tables:
            strings = self.sections[table.link].offset
            for off in range(table.offset, table.offset + table.size, 24):
                name_i, info, _other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", self.data, off
                )
                name = self._string(strings, name_i) if name_i else ""
                if name:
                    out.setdefault(name, Symbol(name, info & 0xF, shndx, value, size))
        return out

    def undefined(self) -> list[str]:
        """Names the module needs from elsewhere without a symbol version: not from the C
        or C++ libraries (whose symbols are versioned), so from the runner or nowhere.
        Weak references are left out."""
        return [name for name, version, weak in self._read_imports() if version <= 1 and not weak]

    def imports(self) -> list[str]:
        """Every name the module takes from elsewhere, from whichever library and with
        whichever version (memcpy@GLIBC_2.14), weak references too: the dynamic linker
        binds one wherever a library it loaded has the name."""
        return [name for name, _, _ in self._read_imports()]

    def _read_imports(self) -> list[tuple[str, int, bool]]:
        try:
            return self._imports()
        except _MALFORMED as error:
            raise ElfError(f"The module's dynamic symbols cannot be read ({error}).") from None

    def _imports(self) -> list[tuple[str, int, bool]]:
        """(name, index of its version (0 or 1: none), whether the reference is weak)."""
        dynsym = next((s for s in self.sections if s.type == SHT_DYNSYM), None)
        if dynsym is None:
            return []
        versions = next((s for s in self.sections if s.name == ".gnu.version"), None)
        strings = self.sections[dynsym.link].offset
        out = []
        for i, off in enumerate(range(dynsym.offset, dynsym.offset + dynsym.size, 24)):
            name_i, info, _other, shndx, _value, _size = struct.unpack_from(
                "<IBBHQQ", self.data, off
            )
            if shndx != 0 or not name_i:
                continue
            version = 0
            if versions is not None:
                version = struct.unpack_from("<H", self.data, versions.offset + 2 * i)[0] & 0x7FFF
            out.append((self._string(strings, name_i), version, info >> 4 == STB_WEAK))
        return out

    def read(self, symbol: Symbol) -> bytes:
        """The initial bytes of a data symbol (zeros for .bss), at most READ_LIMIT."""
        size = min(symbol.size, READ_LIMIT)
        if not 0 < symbol.section < len(self.sections):  # undefined, absolute or common
            raise ElfError(f"The module's {symbol.name} is not data the module holds.")
        section = self.sections[symbol.section]
        if section.type == SHT_NOBITS:
            return bytes(size)
        start = section.offset + symbol.value - section.addr
        if not 0 <= start <= len(self.data) - size:
            raise ElfError(f"The module's {symbol.name} lies outside the file.")
        return self.data[start : start + size]


# -- the libraries a module needs, found as the dynamic loader finds them ----------------------

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29
LD_CACHE = Path("/etc/ld.so.cache")
LD_CACHE_MAGIC = b"glibc-ld.so.cache1.1"


@dataclass(frozen=True)
class Dynamic:
    """What the dynamic loader reads of a shared object to load what it needs."""

    machine: int
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]


def dynamic(path: Path) -> Dynamic:
    """The dynamic section of a 64-bit little-endian ELF file (through its program
    headers, as the loader reads it: section headers may be stripped)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        raise ElfError(f"{path.name} is not a 64-bit little-endian ELF file.")
    try:
        return _dynamic(data)
    except _MALFORMED as error:
        raise ElfError(f"{path.name}'s dynamic section cannot be read ({error}).") from None


def _dynamic(data: bytes) -> Dynamic:
    machine = struct.unpack_from("<H", data, 0x12)[0]
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    headers = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    loads = [(h[3], h[2], h[5]) for h in headers if h[0] == PT_LOAD]  # vaddr, offset, filesz
    entries: list[tuple[int, int]] = []
    for h in (h for h in headers if h[0] == PT_DYNAMIC):
        for off in range(h[2], h[2] + h[5], 16):
            tag, value = struct.unpack_from("<qQ", data, off)
            if tag == 0:
                break
            entries.append((tag, value))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    base = next(
        (o + strtab - v for v, o, n in loads if strtab is not None and v <= strtab < v + n), None
    )

    def strings(tag: int) -> tuple[str, ...]:
        if base is None:
            return ()
        found = []
        for t, v in entries:
            if t == tag:
                end = data.index(b"\0", base + v)
                found.append(data[base + v : end].decode("utf-8", "replace"))
        return tuple(found)

    paths = lambda tag: tuple(p for s in strings(tag) for p in s.split(":") if p)  # noqa: E731
    return Dynamic(machine, strings(DT_NEEDED), paths(DT_RPATH), paths(DT_RUNPATH))


def needed_libraries(module: Path) -> tuple[list[Path], list[str]]:
    """Every shared library `module` needs, directly or through another, in an order that
    loads each one's own needs first, as the dynamic loader would find them: a library's
    RPATH (when it has no RUNPATH), its RUNPATH, /etc/ld.so.cache, then the default
    folders. The module's own RPATH and RUNPATH are not followed: the grader never sets
    them, so one there is the submission's, and what it names is not the system's.
    Returns the paths found and the names found nowhere."""
    top = dynamic(module)
    order: list[Path] = []
    missing: list[str] = []
    seen: set[str] = set()

    def visit(name: str, requester: Dynamic, origin: Path | None) -> None:
        if name in seen:
            return
        seen.add(name)
        path = _find(name, requester, origin, top.machine)
        if path is None:
            missing.append(name)
            return
        own = dynamic(path)
        for dep in own.needed:
            visit(dep, own, path.parent)
        order.append(path)

    for name in top.needed:
        visit(name, Dynamic(top.machine, (), (), ()), None)
    return order, missing


def _find(name: str, requester: Dynamic, origin: Path | None, machine: int) -> Path | None:
    if "/" in name:
        candidates = [Path(name)] if name.startswith("/") else []
    else:
        folders = [] if requester.runpath else list(requester.rpath)
        folders += requester.runpath
        folders = [_expand(f, origin) for f in folders]
        candidates = [Path(f) / name for f in folders if f]
        candidates += _ld_cache().get(name, [])
        candidates += [Path(f) / name for f in _default_folders()]
    return next((p for p in candidates if _loadable(p, machine)), None)


def _expand(folder: str, origin: Path | None) -> str | None:
    """A search folder with $ORIGIN filled in; None for what cannot be filled in here."""
    for token in ("$ORIGIN", "${ORIGIN}"):
        if token in folder:
            if origin is None:
                return None
            folder = folder.replace(token, str(origin))
    return None if "$" in folder else folder


def _loadable(path: Path, machine: int) -> bool:
    """A regular ELF file for this machine (the loader skips others and searches on)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return (
        len(head) == 20
        and head[:4] == b"\x7fELF"
        and head[4] == 2
        and struct.unpack_from("<H", head, 0x12)[0] == machine
    )


@cache
def _ld_cache() -> dict[str, list[Path]]:
    """Library name -> paths, from /etc/ld.so.cache (glibc's format 1.1). Entries for
    glibc-hwcaps subfolders are left out: they may need instructions this CPU lacks,
    and the loader matches an already loaded library by its name anyway."""
    try:
        data = LD_CACHE.read_bytes()
    except OSError:
        return {}
    start = data.find(LD_CACHE_MAGIC)
    if start < 0:
        return {}
    count = struct.unpack_from("<I", data, start + 20)[0]
    table: dict[str, list[Path]] = {}
    for i in range(count):
        at = start + 48 + 24 * i
        if at + 24 > len(data):
            break
        _flags, key, value, _os, hwcap = struct.unpack_from("<iIIIQ", data, at)
        name, path = _c_string(data, start + key), _c_string(data, start + value)
        if hwcap or "/glibc-hwcaps/" in path:
            continue
        table.setdefault(name, []).append(Path(path))
    return table


def _c_string(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at : end if end >= 0 else len(data)].decode("utf-8", "replace")


@cache
def _default_folders() -> tuple[str, ...]:
    """The loader's built-in folders: Debian's multiarch ones, then the usual ones."""
    triplet = sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu"
    return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
