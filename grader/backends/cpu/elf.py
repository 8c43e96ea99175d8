"""A reader for the few parts of a 64-bit little-endian ELF file the CPU backend needs:
symbols with their sizes, and the bytes of initialised data. The compiled module is
described from these alone (the registration footer stores each kernel's signature as
constant data), so describing a submission never runs any of its code."""

from __future__ import annotations

import struct
from dataclasses import dataclass
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


class ElfError(Exception):
    """The file is not an ELF file this reader understands."""


class Elf:
    def __init__(self, path: Path):
        self.data = path.read_bytes()
        if self.data[:4] != b"\x7fELF" or self.data[4] != 2 or self.data[5] != 1:
            raise ElfError(f"{path.name} is not a 64-bit little-endian ELF file")
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
            if shndx != 0 or not name_i or info >> 4 == STB_WEAK:
                continue
            version = 0
            if versions is not None:
                version = struct.unpack_from("<H", self.data, versions.offset + 2 * i)[0] & 0x7FFF
            if version <= 1:
                out.append(self._string(strings, name_i))
        return out

    def read(self, symbol: Symbol) -> bytes:
        """The initial bytes of a data symbol (zeros for .bss)."""
        section = self.sections[symbol.section]
        if section.type == SHT_NOBITS:
            return bytes(symbol.size)
        start = section.offset + symbol.value - section.addr
        return self.data[start : start + symbol.size]
