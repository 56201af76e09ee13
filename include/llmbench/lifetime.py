"""Processes that must not outlive the one that started them (a killed sweep's load generators,
a CLI sweep's llama-server): the kernel's parent-death signal, and a watcher of the parent."""

from __future__ import annotations

import os
from typing import Any

PR_SET_PDEATHSIG = 1


_libc: Any = None


def libc() -> Any:
    """This process's C library (dlopen(NULL): no search, safe to call ahead of a fork), or None."""
    global _libc
    if _libc is None:
        import ctypes

        try:
            _libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            _libc = False
    return _libc or None


def set_parent_death_signal(sig: int) -> bool:
    """Linux: have the kernel send `sig` to this process when the thread that started it exits
    (its parent killed with -9 included). False where unsupported. Call libc() before a fork
    when this runs between fork and exec (a preexec_fn)."""
    c = libc()
    try:
        return c is not None and c.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except AttributeError:  # no prctl: not Linux
        return False


def die_with_parent() -> None:
    """In a multiprocessing child: end at once when the parent process ends, however it ends
    (kill -9 too): the kernel's parent-death signal where there is one, and a thread that waits
    on the parent's sentinel everywhere. Without this a killed sweep's load generators keep
    sending."""
    import signal
    import threading
    from multiprocessing import parent_process

    set_parent_death_signal(signal.SIGKILL)
    parent = parent_process()
    if parent is None:
        return
    if not parent.is_alive():
        os._exit(70)

    def watch() -> None:
        parent.join()  # returns when the parent's sentinel closes: it is gone
        os._exit(70)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
