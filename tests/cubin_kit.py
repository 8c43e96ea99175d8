"""A cubin's sections, for comparing two compiles of one kernel: an ELF64 file's section
headers read with struct, as neither pyelftools nor cuobjdump is needed for it."""

from __future__ import annotations

import struct

# Sections that name the source file: its path and modification time in the line table
# (-lineinfo) and the offsets into it that move with the path's length, the PTX text with
# its `.file` path, and the tool's command line.
NAMING_THE_FILE = frozenset(
    {".debug_line", ".rela.debug_line", ".debug_str", ".nv_debug_ptx_txt", ".note.nv.tkinfo"}
)
_NOBITS = 8  # a section with no bytes in the file (.nv.shared.*)


def sections(cubin: bytes) -> dict[str, bytes]:
    """Each section's name and bytes."""
    (start,) = struct.unpack_from("<Q", cubin, 0x28)
    size, count, names_at = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, start + i * size) for i in range(count)]
    names = headers[names_at][4]
    found = {}
    for name, kind, _, _, offset, length, *_ in headers:
        at = names + name
        text = cubin[at : cubin.index(b"\0", at)].decode()
        found[text] = b"" if kind == _NOBITS else cubin[offset : offset + length]
    return found


def code(cubin: bytes) -> dict[str, bytes]:
    """What decides what the module does: the ELF header's identity, type, machine and
    flags (the GPU's architecture), and every section but those naming the file."""
    found = {k: v for k, v in sections(cubin).items() if k not in NAMING_THE_FILE}
    return {"ELF header": cubin[:0x18] + cubin[0x30:0x34], **found}
