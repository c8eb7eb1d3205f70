"""Reading an ELF shared library's header and exported data without loading it.

`load` uses this to check a package's library before `dlopen` runs any of its code (its
constructors): the machine it was built for (`elf_machine`) and the kernel table it carries
(`elf_symbol_bytes(data, "tensorforge_kernel_table")`). Only what those need is parsed: the
file header, the section headers, `.dynsym` and its string table; anything malformed is
reported as None ("cannot tell"), never an exception.
"""

from __future__ import annotations

import struct

__all__ = ["elf_machine", "elf_symbol_bytes"]

_MACHINES = {62: "x86_64", 183: "aarch64", 3: "i386", 40: "arm", 243: "riscv64", 21: "ppc64",
             22: "s390x"}
_SHT_DYNSYM = 11
_SHT_NOBITS = 8


def elf_machine(data: bytes) -> str | None:
    """The architecture an ELF file's header names, None if it is not ELF."""
    if len(data) < 20 or data[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    return _MACHINES.get(machine, f"machine {machine}")


def _sections(data: bytes, end: str) -> list[tuple[int, ...]] | None:
    """(name, type, addr, offset, size, link, entsize) of every section of an ELF64 file."""
    if len(data) < 64 or data[4] != 2:  # ELFCLASS64 only
        return None
    shoff, = struct.unpack_from(end + "Q", data, 0x28)
    shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        return None
    out = []
    for i in range(shnum):
        name, typ, _, addr, off, size, link, _, _, entsize = struct.unpack_from(
            end + "IIQQQQIIQQ", data, shoff + i * shentsize)
        out.append((name, typ, addr, off, size, link, entsize))
    return out


def elf_symbol_bytes(data: bytes, symbol: str) -> bytes | None:
    """The bytes of the exported data symbol `symbol` as stored in the file (its initial
    value), or None when the file is not a 64-bit ELF or does not define it."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return None
    end = "<" if data[5] == 1 else ">"
    try:
        sections = _sections(data, end)
        if sections is None:
            return None
        want = symbol.encode()
        for _, typ, _, off, size, link, entsize in sections:
            if typ != _SHT_DYNSYM or entsize < 24 or link >= len(sections):
                continue
            stroff, strsize = sections[link][3], sections[link][4]
            for k in range(size // entsize):
                st_name, _, _, st_shndx, st_value, st_size = struct.unpack_from(
                    end + "IBBHQQ", data, off + k * entsize)
                if st_name >= strsize or st_shndx == 0 or st_shndx >= len(sections):
                    continue
                name_end = data.find(b"\0", stroff + st_name, stroff + strsize)
                if data[stroff + st_name:name_end] != want:
                    continue
                _, styp, saddr, soff, ssize, _, _ = sections[st_shndx]
                if styp == _SHT_NOBITS or not saddr <= st_value <= saddr + ssize - st_size:
                    return None
                start = soff + (st_value - saddr)
                return bytes(data[start:start + st_size]) if start + st_size <= len(data) \
                    else None
    except struct.error:
        return None
    return None
