"""tether.init(comm=...) from an mpi4py communicator, every rank running this file under Open MPI's mpirun:
    mpirun.openmpi --oversubscribe -n 4 python -m pytest -q -s -rs python/tests/test_mpi.py
(ctest python_mpi_{2,4}pe through tests/python/mpi_pytest.sh, which skips with the reason when mpirun or mpi4py is
missing). No tether launcher variable is set: the communicator gives position and rendezvous (tether_init_mpi).
Tests are collective: every rank runs them in the same order."""
import numpy as np
import pytest

import tether

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed (python/tests/setup_env.sh installs it "
                                               "when Open MPI's mpicc.openmpi is there)")


@pytest.fixture(scope="module")
def comm():
    c = MPI.COMM_WORLD
    if c.Get_size() < 2:
        raise RuntimeError("test_mpi.py runs under mpirun -n 2 (or more)")
    return c


def ring(rank, size):
    assert tether.my_pe() == rank and tether.n_pes() == size
    a = tether.zeros((2, 4), "float64")
    tether.put(a[:, 1], np.full(2, rank + 0.5), (rank + 1) % size)  # a strided column
    tether.barrier()
    v = a.numpy()
    assert (v[:, 1] == (rank - 1) % size + 0.5).all() and v.sum() == 2 * ((rank - 1) % size + 0.5)
    del v
    tether.barrier()
    a.free()


def test_ring_over_comm_world(comm):
    with tether.init(comm=comm) as w:
        assert w.n_pes == comm.Get_size()
        ring(comm.Get_rank(), comm.Get_size())
    assert not tether.is_initialized()


def test_sub_communicator_is_its_own_job(comm):
    # ranks split by parity: each half is a separate tether job (PE = rank in the half)
    sub = comm.Split(comm.Get_rank() % 2, comm.Get_rank())
    try:
        with tether.init(comm=sub, config={"TETHER_TIMEOUT": 30}):
            ring(sub.Get_rank(), sub.Get_size())
    finally:
        sub.Free()


def test_dup_with_reversed_ranks(comm):
    rev = comm.Split(0, comm.Get_size() - comm.Get_rank())  # PE 0 is the last rank of COMM_WORLD
    try:
        with tether.init(comm=rev):
            assert tether.my_pe() == comm.Get_size() - 1 - comm.Get_rank()
            ring(rev.Get_rank(), rev.Get_size())
    finally:
        rev.Free()


def test_bad_arguments(comm):
    # all refused on every rank before anything collective happens
    for kwargs, match in (({"comm": MPI.COMM_NULL}, "null communicator"),
                          ({"comm": comm, "rank": 0}, "leave rank="),
                          ({"comm": comm, "store": object()}, "not both"),
                          ({"comm": comm.py2f()}, "not an mpi4py communicator"),
                          ({"comm": MPI.COMM_WORLD.Get_group()}, "not an mpi4py communicator"),
                          ({"comm": comm, "config": {"TETHER_NO_SUCH_VARIABLE": 1}}, "unknown config variable")):
        with pytest.raises(tether.Error) as e:
            tether.init(**kwargs)
        assert e.value.status == 1 and match in e.value.message, (kwargs, e.value)
        assert not tether.is_initialized()
    # an intercommunicator between the even and the odd ranks
    rank = comm.Get_rank()
    half = comm.Split(rank % 2, rank)
    inter = half.Create_intercomm(0, comm, 1 - rank % 2, 23)
    try:
        with pytest.raises(tether.Error) as e:
            tether.init(comm=inter)
        assert e.value.status == 1 and "not an intracommunicator (Intercomm)" in e.value.message, e.value
    finally:
        inter.Free()
        half.Free()
    comm.Barrier()


def test_init_again_after_errors(comm):
    with tether.init(comm=comm):
        ring(comm.Get_rank(), comm.Get_size())
