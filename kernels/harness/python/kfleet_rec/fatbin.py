"""Device code in an extension's shared object: its .nv_fatbin section, split into the fatbins
nvcc put there (one per translation unit). Plain bytes work, no torch: tested in CI.

kfleet-measure reads the same section itself (kernels/harness/cpu/device_code.cpp), but it loads
a section whole, and a section with two translation units' fatbins back to back would give it
the first only; so the recorder hands it each fatbin as its own bare file.
"""
import struct

FATBIN_MAGIC = 0xBA55ED50


def nv_fatbin_section(data):
    """The .nv_fatbin section's bytes of a 64-bit ELF, or None."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != 64 or shstrndx >= shnum or shoff + shnum * 64 > len(data):
        return None

    def sh(i):
        name, _type, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * 64)
        return name, off, size

    _, noff, nsize = sh(shstrndx)
    if noff + nsize > len(data):
        return None
    wanted = b".nv_fatbin\0"
    for i in range(shnum):
        name, off, size = sh(i)
        if name + len(wanted) <= nsize and data[noff + name:noff + name + len(wanted)] == wanted:
            if off + size > len(data):
                return None
            return data[off:off + size]
    return None


def split_fatbins(section):
    """The fatbins in a .nv_fatbin section (header: u32 magic, u16 version, u16 header size,
    u64 body size), each whole; the padding between them skipped. [] when the bytes are not
    fatbins (the caller then has no device code to offer for that file)."""
    out, pos = [], 0
    while pos + 16 <= len(section):
        magic, _version, header, body = struct.unpack_from("<IHHQ", section, pos)
        if magic != FATBIN_MAGIC:
            if section[pos:pos + 8] == b"\0" * 8:  # alignment padding between fatbins
                pos += 8
                continue
            return []
        end = pos + header + body
        if header < 16 or end > len(section):
            return []
        out.append(section[pos:end])
        pos = (end + 7) & ~7
    return out
