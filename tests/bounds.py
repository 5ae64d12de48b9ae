"""A CPU-time and memory budget for one call, enforced by the harness rather than asserted on a
clock: ``with bounded(cpu_s=2, memory_mb=500): ...`` interrupts the block with
:class:`BudgetExceeded` once the process has used ``cpu_s`` more seconds of CPU (``ITIMER_PROF``,
so a loaded machine that delays the block does not fail it), and makes an allocation beyond
``memory_mb`` more megabytes of address space fail with MemoryError (``RLIMIT_AS``). A refusal
"before the allocation" or "before the derivation" then shows as a block that finishes inside a
budget far below what the refused work would need."""
from __future__ import annotations

import contextlib
import resource
import signal


class BudgetExceeded(AssertionError):
    """The block used more CPU time than its budget: a hang or a missing size guard."""


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[0])
    return pages * resource.getpagesize()


@contextlib.contextmanager
def bounded(cpu_s: float = 10.0, memory_mb: float | None = 2000.0):
    def expired(signum, frame):
        raise BudgetExceeded(f"the block used more than {cpu_s:g} s of CPU time (a hang or a missing guard)")

    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if memory_mb is not None:
        limit = _address_space() + int(memory_mb * 2**20)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
