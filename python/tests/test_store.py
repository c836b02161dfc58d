"""tether.init(store=...) under tetherrun at 2 and 4 PEs (ctest python_store_{2,4}pe): tetherrun only starts the
processes; its bootstrap variables are REMOVED from the environment before any tether.init here, so the job can only
meet through the store (rank and size are passed as arguments, as a torchrun program would take them from RANK and
WORLD_SIZE). Stores: filestore.FileStore (pure Python, always) and, when torch is importable, torch.distributed's
FileStore, TCPStore and the default store of init_process_group (skipped with the reason otherwise).
    tetherrun -n 4 python -m pytest -q -rs python/tests/test_store.py"""
import datetime
import hashlib
import os
import shutil
import tempfile

import numpy as np
import pytest

import tether
from filestore import FileStore

# Everything through which tether could find its job without the store (launcher detection, tetherrun's socket).
BOOTSTRAP_VARS = ("TETHER_RANK", "TETHER_SIZE", "TETHER_LOCAL_RANK", "TETHER_LOCAL_SIZE", "TETHER_BOOTSTRAP_ADDR",
                  "TETHER_BOOTSTRAP_FD", "TETHER_JOB_SECRET", "TETHER_LAUNCHER", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                  "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(scope="module")
def job():
    launched = {k: os.environ.pop(k) for k in BOOTSTRAP_VARS if k in os.environ}
    if "TETHER_SIZE" not in launched or int(launched["TETHER_SIZE"]) < 2:
        raise RuntimeError("test_store.py runs under tetherrun -n 2 (or more)")
    rank, size = int(launched["TETHER_RANK"]), int(launched["TETHER_SIZE"])
    # a directory of this job, the same on every rank: named after tetherrun's random job secret
    tag = hashlib.sha256(launched["TETHER_JOB_SECRET"].encode()).hexdigest()[:16]
    root = os.path.join(tempfile.gettempdir(), "tether-store-test-" + tag)
    yield rank, size, root, launched
    # rank 0 removes the files once every rank says it is done with them (tests read stores after finalize)
    done = FileStore(os.path.join(root, "done"))
    done.set("rank%d" % rank, b"1")
    if rank == 0:
        for r in range(size):
            done.get("rank%d" % r)
        shutil.rmtree(root, ignore_errors=True)
    os.environ.update(launched)


def no_bootstrap_env():
    left = [k for k in BOOTSTRAP_VARS if k in os.environ]
    assert not left, "bootstrap variables still set: %s" % left


def ring(rank, size):
    """A ring put + barrier on the job just started; checks the values and the position."""
    assert tether.my_pe() == rank and tether.n_pes() == size
    a = tether.zeros(3, "int64")
    tether.put(a, np.arange(3, dtype="int64") + 100 * rank, (rank + 1) % size)
    tether.barrier()
    prev = (rank - 1) % size
    assert (a.numpy() == np.arange(3) + 100 * prev).all()
    tether.barrier()
    a.free()


def published(store, key):
    addr, _, secret = store.get(key).decode().partition("\n")
    return addr, secret


def test_ring_over_file_store(job):
    rank, size, root, launched = job
    store = FileStore(os.path.join(root, "a"))
    no_bootstrap_env()
    n = tether._api._store_inits
    key = "tether/bootstrap.%d" % n
    with tether.init(store=store, rank=rank, size=size):
        ring(rank, size)
    # the store path was taken: rank 0 published a new address (not tetherrun's) that the others read
    assert store.log[0] == (("set", key) if rank == 0 else ("get", key)), store.log
    addr, secret = published(store, key)
    assert addr != launched["TETHER_BOOTSTRAP_ADDR"] and len(secret) == 64 and secret != launched["TETHER_JOB_SECRET"]


def test_reinit_with_the_same_store_uses_a_new_key(job):
    rank, size, root, _ = job
    store = FileStore(os.path.join(root, "a"))  # holds the previous test's key
    n = tether._api._store_inits
    with tether.init(store=store, rank=rank, size=size, config={"TETHER_TIMEOUT": 30}):
        ring(rank, size)
    assert store.check(["tether/bootstrap.%d" % (n - 1), "tether/bootstrap.%d" % n])
    assert tether._api._store_inits == n + 1


def test_rank_size_from_env_and_master_addr(job):
    rank, size, root, _ = job
    store = FileStore(os.path.join(root, "b"))
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1")
    try:
        n = tether._api._store_inits
        with tether.init(store=store, prefix="job-b/"):
            ring(rank, size)
        addr, _ = published(store, "job-b/bootstrap.%d" % n)
        assert addr.startswith("127.0.0.1:"), addr
    finally:
        for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR"):
            del os.environ[k]


def torch_dist():
    try:
        import torch.distributed as dist
    except ImportError as e:
        pytest.skip("torch is not importable (%s): torch.distributed stores not tested" % e)
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    return dist


def test_torch_file_store(job):
    rank, size, root, _ = job
    dist = torch_dist()
    store = dist.FileStore(os.path.join(root, "torch-file-store"), size)
    with tether.init(store=store, rank=rank, size=size, prefix="torch-file/"):
        ring(rank, size)


def test_torch_tcp_store(job):
    rank, size, root, _ = job
    dist = torch_dist()
    timeout = datetime.timedelta(seconds=60)
    ports = FileStore(os.path.join(root, "tcp-port"))  # carries the TCPStore's port (picked by the kernel)
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, size, True, timeout, wait_for_workers=False)
        ports.set("port", str(store.port))
    else:
        store = dist.TCPStore("127.0.0.1", int(ports.get("port")), size, False, timeout)
    with tether.init(store=store, rank=rank, size=size):
        ring(rank, size)
    del store  # rank 0's server may go now: every rank is done with it (finalize is collective)


def test_torch_default_store_of_init_process_group(job):
    rank, size, root, _ = job
    dist = torch_dist()
    if not dist.is_gloo_available():
        pytest.skip("torch.distributed without gloo: no CPU process group to take the default store from")
    dist.init_process_group("gloo", init_method="file://" + os.path.join(root, "pg-init"), rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=60))
    try:
        store = dist.distributed_c10d._get_default_store()
        with tether.init(store=store, rank=rank, size=size):
            ring(rank, size)
    finally:
        dist.destroy_process_group()
