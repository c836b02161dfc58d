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


# ---- teams (tether_team_*: docs/teams.md; docs/python.md "Teams") -------------------------------------------------

def test_team_world_and_shared():
    me, n = me_n()
    w, s = tether.team_world(), tether.team_shared()
    assert (w.my_pe(), w.n_pes(), w.index(), s.index()) == (me, n, 0, 1)
    assert [w.world_pe(p) for p in range(n)] == list(range(n))
    assert s.n_pes() == tether.local_size() and s.my_pe() == tether.local_pe()
    assert w.translate_pe(me, s) == s.my_pe() and s.translate_pe(s.my_pe(), w) == me
    for bad in (-1, n):
        with pytest.raises(tether.Error) as e:
            w.world_pe(bad)
        assert e.value.status_name == "TETHER_ERR_INVALID_PE"
    for t in (w, s):
        with pytest.raises(tether.Error, match="predefined"):
            t.destroy()
    w.barrier()


def test_team_split_even_odd_translate():
    me, n = me_n()
    w = tether.team_world()
    even = w.split_strided(0, 2, (n + 1) // 2)
    odd = w.split_strided(1, 2, n // 2)
    mine, other = (even, odd) if me % 2 == 0 else (odd, even)
    assert other is None and mine is not None
    assert mine.my_pe() == me // 2 and mine.n_pes() == ((n + 1) // 2 if me % 2 == 0 else n // 2)
    assert [mine.world_pe(p) for p in range(mine.n_pes())] == list(range(me % 2, n, 2))
    assert mine.translate_pe(mine.my_pe(), w) == me
    assert w.translate_pe(me, mine) == me // 2
    assert w.translate_pe((me + 1) % n, mine) is None  # the neighbour is of the other parity (n even)
    with pytest.raises(tether.Error) as e:
        mine.translate_pe(mine.n_pes(), w)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE"
    mine.sync()
    mine.barrier()
    mine.destroy()
    assert mine.destroyed


def test_team_reversed_and_nested_split():
    me, n = me_n()
    w = tether.team_world()
    with w.split_strided(n - 1, -1, n) as rev:  # a negative stride inside the parent: the world reversed
        assert rev.my_pe() == n - 1 - me and rev.world_pe(0) == n - 1
        # nested: the first two PEs of the reversed team (world PEs n-1 and n-2)
        top = rev.split_strided(0, 1, 2)
        if me >= n - 2:
            assert top is not None and top.my_pe() == n - 1 - me and top.world_pe(1) == n - 2
            assert top.translate_pe(0, w) == n - 1 and top.translate_pe(1, rev) == 1
            top.barrier()
            top.destroy()
        else:
            assert top is None
        rev.barrier()


def test_team_split_2d():
    me, n = me_n()
    w = tether.team_world()
    for xrange in (1, 2, 3, n + 1):
        row, col = w.split_2d(xrange)
        with row, col:
            width = min(xrange, n)
            first = me - me % xrange
            assert row.my_pe() == me % xrange and row.n_pes() == min(width, n - first)
            assert [row.world_pe(p) for p in range(row.n_pes())] == list(range(first, first + row.n_pes()))
            assert col.my_pe() == me // xrange
            assert [col.world_pe(p) for p in range(col.n_pes())] == list(range(me % xrange, n, xrange))
            assert row.translate_pe(row.my_pe(), col) == col.my_pe()
            row.sync()
            col.barrier()
        assert row.destroyed and col.destroyed
    # a 2-D split of a split team (the column of a grid 2 wide)
    row, col = w.split_2d(2)
    inner_row, inner_col = col.split_2d(1)
    assert inner_row.n_pes() == 1 and inner_col.n_pes() == col.n_pes()
    assert inner_col.world_pe(inner_col.my_pe()) == me
    for t in (inner_row, inner_col, row, col):
        t.destroy()


def test_team_barrier_then_put_to_member():
    me, n = me_n()
    w = tether.team_world()
    even, odd = w.split_strided(0, 2, (n + 1) // 2), w.split_strided(1, 2, n // 2)
    team = even if me % 2 == 0 else odd
    a = tether.zeros(2, "int64")
    t_me, t_n = team.my_pe(), team.n_pes()
    tether.put_nbi(a[0:1], np.array([100 + me]), team.world_pe((t_me + 1) % t_n))  # complete at the team barrier
    team.barrier()
    assert a.numpy()[0] == 100 + team.world_pe((t_me - 1) % t_n)
    team.destroy()
    tether.barrier()  # every PE is done reading before the collective free
    a.free()


@pytest.mark.parametrize("call", ["barrier", "sync", "split_strided", "split_2d"])
def test_team_waits_release_the_gil(call):
    # PEs 1.. wait in the team call while a thread of theirs signals PE 0, which joins only once it has every signal:
    # that only completes when the waiting call released the GIL (else PE 0 gives up after 10 s and fails).
    import threading
    import time
    me, n = me_n()
    sig = tether.zeros(1, "uint64")
    run = {"barrier": lambda t: t.barrier(), "sync": lambda t: t.sync(),
           "split_strided": lambda t: t.split_strided(0, 1, n).destroy(),
           "split_2d": lambda t: [x.destroy() for x in t.split_2d(2)]}[call]
    got = n - 1
    with tether.team_world().split_strided(0, 1, n) as t:
        if me == 0:
            deadline = time.monotonic() + 10
            while tether.signal_fetch(sig[0]) < n - 1 and time.monotonic() < deadline:
                time.sleep(0.001)
            got = tether.signal_fetch(sig[0])
            run(t)
        else:
            worker = threading.Thread(target=lambda: (time.sleep(0.05), tether.signal_op(sig[0], 1, 0, op="add")))
            worker.start()
            run(t)
            worker.join()
    tether.barrier()
    sig.free()  # the collective sequence stays the same on every PE also when the check below fails
    assert got == n - 1, "the other PEs' threads did not run while their main thread waited in %s" % call


def test_team_destroy_and_split_again():
    me, n = me_n()
    w = tether.team_world()
    indices = set()
    for i in range(100):  # more than TETHER_TEAM_MAX (64) teams: destroy frees the index for the next split
        size = 1 + i % n
        t = w.split_strided(0, 1, size)
        if me < size:
            indices.add(t.index())
            assert t.n_pes() == size and t.my_pe() == me
            t.sync()
            t.destroy()
        else:
            assert t is None
    assert indices and max(indices) < 64
    w.barrier()


def test_team_non_member_gets_none():
    me, n = me_n()
    w = tether.team_world()
    last = w.split_strided(n - 1, 1, 1)
    assert (last is None) == (me != n - 1)
    if last is not None:
        assert (last.my_pe(), last.n_pes(), last.world_pe(0)) == (0, 1, n - 1)
        assert w.translate_pe(0, last) is None
        last.destroy()
    w.barrier()


@pytest.mark.parametrize("start,stride,size", [(0, -1, 2), (0, 1, 99), (1, 1, 99), (0, 0, 2), (0, 1, -1), (99, 1, 1)])
def test_team_bad_split_fails_on_every_pe(start, stride, size):
    w = tether.team_world()
    with pytest.raises(tether.Error) as e:
        w.split_strided(start, stride, size)
    assert e.value.status_name == "TETHER_ERR_INVALID_ARG" and "split_strided" in e.value.message
    with pytest.raises(tether.Error) as e:
        w.split_2d(0)
    assert e.value.status_name == "TETHER_ERR_INVALID_ARG"
    w.barrier()  # the parent stays usable


def test_team_mismatched_split_fails_on_every_pe():
    me, n = me_n()
    w = tether.team_world()
    with pytest.raises(tether.Error) as e:
        w.split_strided(0, 1, 1 + me % 2)  # PE 0 says size 1, PE 1 size 2
    assert e.value.status_name == "TETHER_ERR_MISMATCH"
    w.barrier()


def test_team_use_after_destroy():
    me, n = me_n()
    w = tether.team_world()
    t = w.split_strided(0, 1, n)
    t.destroy()
    for call in (t.my_pe, t.n_pes, t.index, t.sync, t.barrier, t.destroy, lambda: t.world_pe(0),
                 lambda: t.translate_pe(0, w), lambda: w.translate_pe(0, t), lambda: t.split_strided(0, 1, 1),
                 lambda: t.split_2d(1)):
        with pytest.raises(tether.Error, match="destroyed"):
            call()
    w.barrier()


# ---- team collectives (tether.allreduce & co.: docs/python.md "Collectives") ----------------------------------------

SEED = int(os.environ.get("MP_SEED", "1"))
print("test_mp.py collectives: MP_SEED=%d" % SEED)
_REF = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
        "or": np.bitwise_or, "xor": np.bitwise_xor}


def inputs(case, pe, count, dtype):
    """Team PE pe's input of a case: any bits for integers; small integers for floats (exact sums and products)."""
    rng = np.random.default_rng([SEED, case, pe])
    if np.dtype(dtype).kind == "f":
        return rng.integers(-2, 3, count).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)


def reference(op, case, n, count, dtype, block=None):
    """op over team PEs 0..n-1 in team order (block: the elements [block*count, (block+1)*count) of each input)."""
    with np.errstate(over="ignore"):
        r = None
        for pe in range(n):
            x = inputs(case, pe, count * (n if block is not None else 1), dtype)
            if block is not None:
                x = x[block * count:(block + 1) * count]
            r = x if r is None else _REF[op](r, x).astype(dtype)
    return r


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                   "float16", "float32", "float64"])
def test_allreduce_every_dtype_and_op(dtype):
    me, n = me_n()
    ops = ["sum", "prod", "min", "max"] + (["and", "or", "xor"] if np.dtype(dtype).kind != "f" else [])
    count = 37
    src, dest = tether.zeros(count, dtype), tether.zeros(count, dtype)
    for i, op in enumerate(ops):
        case = 1000 + i
        src.numpy()[:] = inputs(case, me, count, dtype)
        tether.allreduce(dest, src, op=op)
        assert np.array_equal(dest.numpy(), reference(op, case, n, count, dtype)), (dtype, op, SEED)
        tether.allreduce(src, op=op)  # in place
        assert np.array_equal(src.numpy(), reference(op, case, n, count, dtype)), (dtype, op, "in place", SEED)
    tether.barrier()
    dest.free()
    src.free()


def test_movers_and_rooted_collectives():
    me, n = me_n()
    count = 5
    root = n - 1
    a, b = tether.zeros(count * n, "int32"), tether.zeros(count * n, "int32")
    mine = inputs(1, me, count * n, "int32")
    a.numpy()[:] = mine
    tether.broadcast(b[:count], a[:count], root)
    assert np.array_equal(b.numpy()[:count], inputs(1, root, count * n, "int32")[:count])
    b.numpy()[:] = 0
    tether.reduce(b[:count], a[:count], root, op="max")
    want = reference("max", 1, n, count * n, "int32")[:count]
    assert np.array_equal(b.numpy()[:count], want if me == root else np.zeros(count, "int32"))
    tether.allgather(b, a[:count])
    assert np.array_equal(b.numpy(), np.concatenate([inputs(1, p, count * n, "int32")[:count] for p in range(n)]))
    tether.reduce_scatter(b[:count], a, op="sum")
    assert np.array_equal(b.numpy()[:count], reference("sum", 1, n, count, "int32", block=me))
    tether.alltoall(b, a)
    assert np.array_equal(b.numpy(), np.concatenate([inputs(1, p, count * n, "int32")[me * count:(me + 1) * count]
                                                     for p in range(n)]))
    tether.barrier()
    b.free()
    a.free()


def test_collectives_on_a_split_team():
    me, n = me_n()
    w = tether.team_world()
    rev = w.split_strided(n - 1, -1, n)  # team PE k = world PE n-1-k
    odd = w.split_strided(1, 2, n // 2)
    a, b = tether.zeros(4 * n, "float64"), tether.zeros(4 * n, "float64")
    a.numpy()[:] = inputs(2, rev.my_pe(), 4 * n, "float64")
    tether.allgather(b[:4 * n], a[:4], team=rev)
    assert np.array_equal(b.numpy(), np.concatenate([inputs(2, k, 4 * n, "float64")[:4] for k in range(n)]))
    if odd is not None:
        m = odd.n_pes()
        a.numpy()[:4] = inputs(3, odd.my_pe(), 4, "float64")
        tether.allreduce(b[:4], a[:4], op="sum", team=odd)
        assert np.array_equal(b.numpy()[:4], reference("sum", 3, m, 4, "float64"))
        odd.destroy()
    rev.destroy()
    w.barrier()
    b.free()
    a.free()


def test_collective_bad_input_fails_on_every_pe():
    me, n = me_n()
    a, b = tether.zeros(8 * n, "int64"), tether.zeros(8 * n, "float64")
    # Only PE 0's arrays are wrong: every PE fails (the others through the agreement), none waits for a timeout.
    dest = a[:7] if me == 0 else a[:8]
    with pytest.raises(tether.Error) as e:
        tether.allreduce(dest, a[8:16])
    assert e.value.status_name == "TETHER_ERR_INVALID_ARG"
    if me == 0:
        assert "same size" in e.value.message
    with pytest.raises(tether.Error) as e:
        tether.allgather(a, b[:8] if me == 0 else a[:8])  # dtypes differ on PE 0
    assert e.value.status_name == "TETHER_ERR_INVALID_ARG"
    # Different counts on different PEs: a mismatch, on every PE.
    with pytest.raises(tether.Error) as e:
        tether.allreduce(a[:4 + me], a[8:12 + me])
    assert e.value.status_name == "TETHER_ERR_MISMATCH"
    # Local argument errors raised before anything is sent (every PE passes them alike).
    with pytest.raises(tether.Error, match="reduction op"):
        tether.allreduce(a, op="avg")
    with pytest.raises(tether.Error, match="integer"):
        tether.allreduce(b[:8], op="xor")  # bitwise op on floats: refused by tether on every PE
    with pytest.raises(tether.Error, match="contiguous"):
        tether.allreduce(a[::2], a[1::2])
    with pytest.raises(tether.Error, match="n_pes times"):
        tether.allgather(a[:8], a[8:16])
    with pytest.raises(tether.Error, match="SymmetricArray"):
        tether.allreduce(np.zeros(4), np.zeros(4))
    tether.allreduce(a[:8], a[8:16])  # the world team is still usable
    tether.barrier()
    b.free()
    a.free()
