"""tether from Python: symmetric arrays, one-sided put/get, atomics, signals, barriers, teams and their collectives
(docs/python.md).

    import numpy as np, tether
    with tether.init():                       # under tetherrun (or alone: a job of 1 PE)
        me, n = tether.my_pe(), tether.n_pes()
        a = tether.zeros((4, 8), "float64")    # collective; symmetric heap (device="cuda": GPU memory)
        tether.put(a[:, 3], np.full(4, me, "float64"), pe=(me + 1) % n)   # strided: one typed put
        tether.barrier()
        print(np.from_dlpack(a))              # zero-copy view (tracked: a.free() refuses while it lives)

Every failure raises tether.Error with the C library's message (tether_last_error()) and status code.
"""
from ._errors import Error, status_name
from . import _tether
from ._array import SymmetricArray, from_address
from ._api import (init, finalize, is_initialized, world, my_pe, n_pes, local_pe, local_size, barrier, sync, quiet,
                   fence, team_world, team_shared, empty, zeros, free, put, get, put_nbi, get_nbi, putmem, getmem, put_signal, signal_op,
                   signal_fetch, signal_wait_until, wait_until, test, fetch, set, swap, compare_swap, inc, fetch_inc,
                   add, fetch_add, and_, fetch_and, or_, fetch_or, xor, fetch_xor, version, build_info,
                   broadcast, reduce, allreduce, allgather, reduce_scatter, alltoall,
                   SIGNAL_SET, SIGNAL_ADD, CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE)

Team = _tether.Team

_tether._set_error_type(Error)

__version__ = "%d.%d.%d" % _tether.version()

__all__ = [name for name in dir() if not name.startswith("_")]
