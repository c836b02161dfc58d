"""Multi-process tests of the tether package on host memory; every PE runs this file under the launcher:
    tetherrun -n 4 python -m pytest -q python/tests/test_mp.py
Tests are collective: every PE runs them in the same (file) order. Registered in ctest as python_mp_{2,4}pe."""
import os
import random

import numpy as np
import pytest

import tether


@pytest.fixture(scope="module", autouse=True)
def world():
    w = tether.init().world
    if w.n_pes < 2:
        tether.finalize()
        pytest.skip("multi-process tests: run under tetherrun -n 2 (or more)")
    yield w
    tether.finalize()


def me_n():
    return tether.my_pe(), tether.n_pes()


def test_ring_column_put():
    me, n = me_n()
    a = tether.zeros((4, 8), "float64")
    tether.put(a[:, 3], np.full(4, me + 1.0), (me + 1) % n)  # a strided column: one typed put
    tether.barrier()
    v = a.numpy()
    assert (v[:, 3] == (me - 1) % n + 1).all()
    assert v.sum() == 4 * ((me - 1) % n + 1)
    del v
    tether.barrier()  # nobody frees while a peer may still read (free is collective and ends with a barrier anyway)
    a.free()


def test_get_from_every_pe():
    me, n = me_n()
    a = tether.empty(6, "int32")
    a.numpy()[:] = np.arange(6, dtype="int32") * (me + 1)
    tether.barrier()
    out = np.zeros(6, "int32")
    for pe in range(n):
        tether.get(out, a, pe)
        assert (out == np.arange(6) * (pe + 1)).all()
        back = np.zeros(3, "int32")
        tether.get(back, a[::-2], pe)  # strided, reversed remote side
        assert (back == np.array([5, 3, 1]) * (pe + 1)).all()
    tether.barrier()
    a.free()


def test_strided_random_puts_to_next_pe():
    seed = int(os.environ.get("TETHER_TEST_SEED", "0")) or random.randrange(1 << 30)
    me, n = me_n()
    # every PE uses the same seed (PE 0's, shared through the heap) so the collective sequence matches
    box = tether.zeros(1, "int64")
    if me == 0:
        box.numpy()[0] = seed
    tether.barrier()
    got = np.zeros(1, "int64")
    tether.get(got, box, 0)
    seed = int(got[0])
    print("seed", seed)
    rng = np.random.default_rng(seed)
    shape = (5, 6, 4)
    a = tether.zeros(shape, "float32")
    ref = np.zeros(shape, "float32")
    for it in range(20):
        key = tuple(slice(int(rng.integers(0, d)), None, int(rng.choice([1, 2, -1]))) for d in shape)
        data = rng.standard_normal(ref[key].shape).astype("float32") + it
        ref[key] = data
        tether.put(a[key], data + me, (me + 1) % n)
    tether.barrier()
    prev = (me - 1) % n
    v = a.numpy()
    mask = np.zeros(shape, bool)
    rng = np.random.default_rng(seed)
    for it in range(20):  # the expected contents: the last write of each element, plus the writer's PE number
        key = tuple(slice(int(rng.integers(0, d)), None, int(rng.choice([1, 2, -1]))) for d in shape)
        rng.standard_normal(ref[key].shape)
        mask[key] = True
    assert np.allclose(v[mask], ref[mask] + prev), seed
    assert (v[~mask] == 0).all(), seed
    del v
    tether.barrier()
    a.free()
    box.free()


def test_fetch_add_counter_on_pe0():
    me, n = me_n()
    c = tether.zeros(1, "int64")
    olds = [tether.fetch_add(c[0], 1, 0) for _ in range(10)]
    assert len(set(olds)) == 10
    tether.barrier()
    assert tether.fetch(c[0], 0) == 10 * n
    tether.barrier()
    c.free()


def test_compare_swap_one_winner():
    me, n = me_n()
    lock = tether.zeros(1, "int32")
    won = tether.compare_swap(lock[0], 0, me + 1, 0) == 0
    wins = tether.zeros(1, "int32")
    if won:
        tether.add(wins[0], 1, 0)
    tether.barrier()
    assert tether.fetch(wins[0], 0) == 1
    assert 1 <= tether.fetch(lock[0], 0) <= n
    tether.barrier()
    wins.free()
    lock.free()


def test_put_signal_ring():
    me, n = me_n()
    data = tether.zeros(16, "float64")
    sig = tether.zeros(1, "uint64")
    tether.put_signal(data, np.full(16, float(me)), sig[0], 1, (me + 1) % n)
    assert tether.signal_wait_until(sig[0], ">=", 1) in (1, 3)  # the previous PE may have added 2 already
    assert (data.numpy() == (me - 1) % n).all()
    tether.signal_op(sig[0], 2, (me + 1) % n, op="add")
    assert tether.signal_wait_until(sig[0], ">=", 3) == 3
    tether.barrier()
    data.free()
    sig.free()


def test_wait_until_value_from_neighbour():
    me, n = me_n()
    x = tether.zeros(2, "int64")
    tether.set(x[1], 40 + me, (me + 1) % n)
    tether.wait_until(x[1], "==", 40 + (me - 1) % n)
    assert tether.test(x[1], ">=", 40)
    tether.barrier()
    x.free()


def test_all_to_all_rows():
    me, n = me_n()
    recv = tether.zeros((n, 3), "int64")
    for pe in range(n):
        tether.put_nbi(recv[me], np.array([me, pe, me * 100 + pe]), pe)
    tether.barrier()
    v = recv.numpy()
    assert (v[:, 0] == np.arange(n)).all() and (v[:, 1] == me).all() and (v[:, 2] == np.arange(n) * 100 + me).all()
    del v
    recv.free()


def test_bad_input_at_n_pes():
    me, n = me_n()
    a = tether.zeros(4, "float64")
    with pytest.raises(tether.Error) as e:
        tether.put(a, np.zeros(4), n)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE" and str(n) in e.value.message
    with pytest.raises(tether.Error) as e:
        tether.get(np.zeros(4), a, -1)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE"
    with pytest.raises(tether.Error, match="dtype differs"):
        tether.put(a, np.zeros(4, "float32"), (me + 1) % n)
    with pytest.raises(tether.Error, match="symmetric side"):
        tether.put(np.zeros(4), np.zeros(4), (me + 1) % n)
    tether.barrier()
    a.free()


def test_collective_mismatch_fails_on_every_pe():
    me, n = me_n()
    with pytest.raises(tether.Error) as e:
        tether.zeros(8 + me, "int64")  # different sizes on different PEs
    assert e.value.status_name == "TETHER_ERR_MISMATCH"
    tether.barrier()
