"""The memory this process may still take, and the refusal of a figure past it.

`available()` is the least of what /proc/meminfo calls MemAvailable (os.sysconf's free
pages where there is no /proc), what a cgroup's memory limit leaves (cgroup v2's
/sys/fs/cgroup/memory.max, or v1's memory.limit_in_bytes, less the memory in use but
not its reclaimable page cache) and what the address-space limit (RLIMIT_AS) leaves.
`refuse_past_available` raises one ArchgraphError naming both figures (archgraph.torch
calls it before it allocates a module or its inputs).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .errors import ArchgraphError

CGROUP = Path("/sys/fs/cgroup")
UNLIMITED = 2 ** 60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1


@dataclass(frozen=True)
class Available:
    """Bytes this process may still take, and what says so."""

    bytes: int
    source: str  # "MemAvailable in /proc/meminfo", "the cgroup limit in /sys/fs/cgroup/memory.max", ...


def binary(n: int | None) -> str:
    """Bytes in binary units, as accelerate prints them: 433241088 -> '413.18 MiB'."""
    if n is None:
        return "—"
    if abs(n) >= 2 ** 1000:  # past what a float holds
        return f"about 10^{int(math.log10(abs(n)))} B"
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def available() -> Available | None:
    """The least of the limits this machine sets on this process (None when none can be read)."""
    found = [a for a in (_meminfo(), _cgroup_v2(), _cgroup_v1(), _address_space()) if a is not None]
    return min(found, key=lambda a: a.bytes) if found else None


def refuse_past_available(need: Mapping[str, int], what: str, hint: str) -> None:
    """An ArchgraphError when the bytes in `need` (by part: parameters, inputs, ...) add up to more than
    `available()`: '`what` needs N (parts); this machine has M available (source)'."""
    total = sum(need.values())
    free = available()
    if free is None or total <= free.bytes:
        return
    parts = ", ".join(f"{part} {binary(n)}" for part, n in need.items() if n)
    raise ArchgraphError(f"{what} needs {binary(total)} ({parts}); this machine has {binary(free.bytes)} "
                         f"available ({free.source})", hint=hint)


def _meminfo() -> Available | None:
    kib = _field(Path("/proc/meminfo"), "MemAvailable:")
    if kib is not None:
        return Available(kib * 1024, "MemAvailable in /proc/meminfo")
    try:
        return Available(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free pages (os.sysconf)")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_v2() -> Available | None:
    limit = _number(CGROUP / "memory.max")
    used = _number(CGROUP / "memory.current")
    if limit is None or used is None:
        return None
    cache = _field(CGROUP / "memory.stat", "inactive_file") or 0
    return Available(max(limit - used + cache, 0), f"the cgroup limit in {CGROUP / 'memory.max'}")


def _cgroup_v1() -> Available | None:
    folder = CGROUP / "memory"
    limit = _number(folder / "memory.limit_in_bytes")
    used = _number(folder / "memory.usage_in_bytes")
    if limit is None or used is None or limit >= UNLIMITED:
        return None
    cache = _field(folder / "memory.stat", "total_inactive_file") or 0
    return Available(max(limit - used + cache, 0), f"the cgroup limit in {folder / 'memory.limit_in_bytes'}")


def _address_space() -> Available | None:
    try:
        import resource
    except ImportError:  # not on Unix
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    mapped = (_field(Path("/proc/self/status"), "VmSize:") or 0) * 1024
    return Available(max(limit - mapped, 0), "the address-space limit, ulimit -v")


def _number(path: Path) -> int | None:
    """The integer a one-line file holds (None for 'max', no file, anything else)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _field(path: Path, key: str) -> int | None:
    """The first number on the line of `path` that starts with `key` (/proc/meminfo, memory.stat)."""
    try:
        with open(path, encoding="ascii") as lines:
            for line in lines:
                if line.startswith(key):
                    value = line[len(key):].split()
                    return int(value[0]) if value and value[0].isdigit() else None
    except (OSError, UnicodeDecodeError):
        return None
    return None
