"""How a one-shot command's process asks the C allocator to keep memory it freed, for the next array.

A diagnosis of a long log makes and drops thousands of arrays of a few hundred kB to a few MB (a column, a
rolling level, a check's temporary). glibc gives each of those back to the system when it is freed (an array
past its mmap threshold is unmapped; the top of the heap is trimmed past its trim threshold), so the next one
is fresh memory the kernel must fault in page by page: on a 100k-step veRL log about 100,000 page faults and a
third of a CPU second in the kernel, half of them for memory that was just freed. With arrays up to 32 MiB
taken from the heap and up to 64 MiB of free heap kept, half the faults go (measured in docs/development.md).

Only for a command that ends when its work is done (the process's memory goes back to the system with it),
and only under glibc: elsewhere nothing is changed.
"""

from __future__ import annotations

import os

#: mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: an allocation this large or larger is mapped on its own (glibc's own ceiling for its moving threshold)
MMAP_BYTES = 32 << 20
#: free memory at the top of the heap kept for later allocations, up to this much
TRIM_BYTES = 64 << 20


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep freed memory for reuse (see the module's doc); False when the C library is not
    glibc or refused, and nothing changed."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):  # no such name here (not glibc's confstr)
        return False
    if not libc or not libc.startswith("glibc"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success; the mmap threshold first (setting one stops glibc moving both)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
