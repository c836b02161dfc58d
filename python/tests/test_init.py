"""The init forms of tether.init() in one process (ctest python_unit): bad arguments of comm= and store=, a stale store
key, a 1-PE store job, and that importing tether imports no mpi4py. Every case raises tether.Error (never hangs: a
rank waiting on a dead rendezvous fails within TETHER_TIMEOUT). The multi-process forms: test_store.py (tetherrun,
store=) and test_mpi.py (mpirun, comm=)."""
import os
import subprocess
import sys
import time

import pytest

import tether
from filestore import FileStore

INVALID_ARG = 1


@pytest.fixture(autouse=True)
def not_initialised():
    assert not tether.is_initialized()
    yield
    if tether.is_initialized():
        tether.finalize()


def expect_error(status=INVALID_ARG, match=None, **kwargs):
    with pytest.raises(tether.Error) as e:
        tether.init(**kwargs)
    assert status is None or e.value.status == status, e.value
    if match:
        assert match in e.value.message, e.value.message
    assert not tether.is_initialized()
    return e.value


def test_import_does_not_import_mpi4py():
    code = "import sys, tether; assert 'mpi4py' not in sys.modules, sorted(m for m in sys.modules if 'mpi' in m)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


class GetOnly:
    def get(self, key):
        return b""


def test_bad_arguments(tmp_path):
    store = FileStore(str(tmp_path))
    expect_error(match="not both", comm=object(), store=store)
    expect_error(match="not an mpi4py communicator", comm="MPI_COMM_WORLD")
    expect_error(match="go with store=", rank=0, size=2)
    expect_error(match="no set() method", store=GetOnly(), rank=0, size=2)
    expect_error(match="rank 2 of size 2", store=store, rank=2, size=2)
    expect_error(match="rank -1 of size 2", store=store, rank=-1, size=2)
    expect_error(match="rank 0 of size 0", store=store, rank=0, size=0)
    expect_error(match="is not an integer", store=store, rank="0", size=2)
    expect_error(match="prefix=", store=store, rank=0, size=2, prefix=b"x/")
    for k in ("RANK", "WORLD_SIZE"):
        os.environ.pop(k, None)
    expect_error(match="RANK not set", store=store, size=2)
    os.environ["WORLD_SIZE"] = "two"
    try:
        expect_error(match="WORLD_SIZE='two' is not an integer", store=store, rank=1)
    finally:
        del os.environ["WORLD_SIZE"]
    assert store.log == []  # nothing reached the store


def test_one_pe_store_job_needs_no_rendezvous(tmp_path):
    store = FileStore(str(tmp_path))
    with tether.init(store=store, rank=0, size=1) as w:
        assert w.n_pes == 1 and tether.my_pe() == 0
        tether.barrier()
    assert store.log == []


def test_stale_key_is_refused_on_rank_0(tmp_path):
    store = FileStore(str(tmp_path))
    key = "stale/bootstrap.%d" % tether._api._store_inits
    store.set(key, b"127.0.0.1:1\n" + b"0" * 64)  # left by an earlier job
    expect_error(match="already holds '%s'" % key, store=store, rank=0, size=2, prefix="stale/")


def test_malformed_value_is_refused(tmp_path):
    store = FileStore(str(tmp_path))
    store.set("bad/bootstrap.%d" % tether._api._store_inits, b"no secret here")
    expect_error(match="not rank 0's", store=store, rank=1, size=2, prefix="bad/")


def test_dead_rendezvous_fails_within_the_timeout(tmp_path):
    # rank 1 of 2 finds an address where no rank 0 listens: a bounded failure, not a hang
    store = FileStore(str(tmp_path))
    store.set("dead/bootstrap.%d" % tether._api._store_inits, b"127.0.0.1:1\n" + b"ab" * 32)
    t0 = time.monotonic()
    e = expect_error(status=None, store=store, rank=1, size=2, prefix="dead/", config={"TETHER_TIMEOUT": 2})
    assert time.monotonic() - t0 < 30, e


def test_store_get_failure_propagates(tmp_path):
    store = FileStore(str(tmp_path), timeout=0.2)  # rank 0 never publishes
    with pytest.raises(TimeoutError):
        tether.init(store=store, rank=1, size=2, prefix="never/")
    assert not tether.is_initialized()
