"""Single-process tests of the tether package (a job of 1 PE: no launcher). Run: python -m pytest python/tests/test_single.py
Registered in ctest as python_unit (tests/python/CMakeLists.txt)."""
import os
import random

import numpy as np
import pytest

import tether


@pytest.fixture(scope="module", autouse=True)
def world():
    w = tether.init(config={"TETHER_TIMEOUT": "2"}).world
    yield w
    tether.finalize()
    assert not tether.is_initialized()


def test_version_and_build_info():
    assert tether.version() == tuple(int(x) for x in tether.__version__.split("."))
    info = tether.build_info()
    assert set(info) == {"cuda", "ucx", "sanitizers", "ucx_version", "gpus_visible"}


def test_world():
    assert tether.my_pe() == 0 and tether.n_pes() == 1
    assert tether.local_pe() == 0 and tether.local_size() == 1
    tether.barrier()
    tether.sync()
    tether.quiet()
    tether.fence()
    with pytest.raises(tether.Error) as e:
        tether.init()
    assert e.value.status == 1 and "already initialised" in e.value.message


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint64", "int8", np.int16, np.dtype("complex64")])
def test_zeros_dlpack_zero_copy(dtype):
    a = tether.zeros((3, 5), dtype)
    assert a.shape == (3, 5) and a.device == "cpu" and a.dtype == np.dtype(dtype)
    assert a.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(a)
    assert v.dtype == np.dtype(dtype) and v.shape == (3, 5) and not v.any()
    assert v.ctypes.data == a.address  # zero-copy
    v[1, 2] = 7
    out = np.zeros(1, dtype)
    tether.get(out, a[1, 2:3], 0)  # the write through the view is in the symmetric array
    assert out[0] == 7
    del v
    a.free()


def test_empty_shapes_and_bad_arguments():
    a = tether.empty(0, "float64")
    assert a.shape == (0,) and a.size == 0
    a.free()
    s = tether.empty((), "int64")
    assert s.shape == () and s.size == 1
    s.free()
    with pytest.raises(tether.Error, match="unknown dtype"):
        tether.zeros(4, "float77")
    with pytest.raises(tether.Error, match="device"):
        tether.zeros(4, "float64", device="tpu")
    with pytest.raises(tether.Error, match="negative dimension"):
        tether.zeros((2, -1), "float64")


def test_array_interface():
    a = tether.zeros(6, "int32")
    ai = a.__array_interface__
    assert ai["data"][0] == a.address and ai["typestr"] == "<i4" and ai["shape"] == (6,)
    with pytest.raises(AttributeError):
        a.__cuda_array_interface__
    v = np.asarray(a[::2])  # strided view through the interface
    assert v.strides == (8,)
    del v, ai
    with pytest.raises(tether.Error, match="__array_interface__"):
        a.free()  # the object a handed out its address: refused while it lives
    b = tether.zeros(2, "int32")
    b.free()


def test_free_rules():
    a = tether.zeros(4, "float64")
    v = a.numpy()
    with pytest.raises(tether.Error, match="still alive"):
        a.free()
    with pytest.raises(tether.Error, match="still alive"):
        tether.finalize()  # finalize would release the heap under the view
    del v
    with pytest.raises(tether.Error, match="view of an allocation"):
        a[1:].free()
    a.free()
    with pytest.raises(tether.Error, match="already freed"):
        a.free()
    with pytest.raises(tether.Error, match="after free"):
        tether.put(a, np.zeros(4), 0)
    with tether.zeros(3, "int64") as c:  # context manager frees
        tether.put(c, np.arange(3), 0)
    assert c.allocation.freed


def test_put_get_contiguous():
    a = tether.zeros((4, 4), "float64")
    src = np.arange(16.0).reshape(4, 4)
    tether.put(a, src, 0)
    out = np.empty((4, 4))
    tether.get(out, a, 0)
    assert (out == src).all()
    tether.put_nbi(a[2], np.full(4, -1.0), 0)
    tether.quiet()
    tether.get_nbi(out[2], a[2], 0)
    tether.quiet()
    assert (out[2] == -1).all()
    tether.put(a[0], [9, 9, 9, 9], 0)  # a list goes through numpy with the array's dtype
    assert (a.numpy()[0] == 9).all()
    a.free()


def test_put_get_strided_matches_numpy():
    seed = int(os.environ.get("TETHER_TEST_SEED", random.randrange(1 << 30)))
    print("seed", seed)
    rng = np.random.default_rng(seed)
    shape = (6, 7, 5)
    a = tether.zeros(shape, "int64")
    ref = np.zeros(shape, "int64")
    for _ in range(40):
        key = tuple(slice(int(rng.integers(0, d)), None, int(rng.choice([1, 2, 3, -1, -2]))) if rng.random() < 0.8
                    else int(rng.integers(0, d)) for d in shape) + (Ellipsis,)
        view = ref[key]  # a view also when every index is an integer (0-d)
        data = rng.integers(-1000, 1000, size=view.shape)
        src = data if rng.random() < 0.5 else np.ascontiguousarray(data.T).T  # a strided local side too
        tether.put(a[key], src, 0)
        view[...] = data
        got = np.zeros(view.shape, "int64")
        tether.get(got, a[key], 0)
        assert (got == ref[key]).all(), (seed, key)
    assert (a.numpy() == ref).all(), seed
    a.free()


def test_indexing_matches_numpy():
    a = tether.zeros((3, 4, 5), "int32")
    v = a.numpy()
    keys = [1, -1, (0, 2), (slice(None), 3), (Ellipsis, 2), (1, Ellipsis), (1, Ellipsis, 4), (Ellipsis,),
            (slice(None, None, -1), slice(1, 4, 2)), (slice(5, 9),), (slice(2, 0, -1), -4, slice(None, None, 3)),
            (Ellipsis, slice(0, 0)), (2, 3, 4), (-3, -4, -5), ()]
    for key in keys:
        got, ref = a[key], v[key]
        if not isinstance(ref, np.ndarray):  # an element: numpy gives a scalar, tether a 0-d view
            ref = v[key + (Ellipsis,)] if isinstance(key, tuple) else v[key, ...]
        assert got.shape == ref.shape and got.strides == ref.strides, key
        if got.size:
            assert got.address == ref.ctypes.data, key
    for bad in [3, -4, (0, 4), (0, 0, 5), (0, 0, 0, 0), (Ellipsis, Ellipsis)]:
        with pytest.raises(IndexError):
            a[bad]
    with pytest.raises(TypeError):
        a[1.5]
    del v, ref  # numpy views of a (ref too): free() would be refused while they live
    a.free()


def test_column_put_is_one_typed_put():
    a = tether.zeros((4, 8), "float32")
    tether.put(a[:, 3], np.arange(4, dtype="float32"), 0)
    v = a.numpy()
    assert (v[:, 3] == np.arange(4)).all() and v.sum() == 6
    del v
    a.free()


def test_bad_input():
    a = tether.zeros((4, 8), "float64")
    with pytest.raises(tether.Error, match="dtype differs") as e:
        tether.put(a[:, 3], np.arange(4, dtype="int64"), 0)
    assert e.value.status == 1 and e.value.status_name == "TETHER_ERR_INVALID_ARG"
    with pytest.raises(tether.Error, match="5 elements in the local buffer, 4 in the symmetric"):
        tether.put(a[:, 3], np.arange(5.0), 0)
    with pytest.raises(tether.Error) as e:
        tether.put(a[:, 3], np.arange(4.0), 1)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE" and "PE 1" in e.value.message
    with pytest.raises(tether.Error) as e:
        tether.get(np.zeros(8), a[0], -1)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE"
    with pytest.raises(tether.Error, match="symmetric side must be"):
        tether.put(np.zeros(4), np.arange(4.0), 0)  # a non-symmetric destination
    with pytest.raises(tether.Error) as e:
        tether.putmem(np.zeros(4).ctypes.data, np.zeros(4).ctypes.data, 32, 0)
    assert e.value.status_name == "TETHER_ERR_NOT_SYMMETRIC"
    with pytest.raises(IndexError):
        a[4]
    with pytest.raises(IndexError):
        a[0, -9]
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(tether.Error) as e:
        tether.from_address(np.zeros(4).ctypes.data, 4, "float64")
    assert e.value.status_name == "TETHER_ERR_NOT_SYMMETRIC"
    with pytest.raises(tether.Error, match="one element"):
        tether.fetch_add(a[0, 0:2], 1, 0)
    ro = np.zeros(8)
    ro.flags.writeable = False
    with pytest.raises(tether.Error, match="not a writable array"):
        tether.get(ro, a[0], 0)  # a read-only destination is not accepted
    with pytest.raises(tether.Error, match="not an array"):
        tether.put(a[0], object(), 0)
    a.free()


def test_from_address_wraps_existing_allocation():
    a = tether.zeros(8, "int32")
    w = tether.from_address(a.address, (2, 4), "int32")
    tether.put(w[1], np.arange(4, dtype="int32"), 0)
    assert list(a.numpy()[4:]) == [0, 1, 2, 3]
    with pytest.raises(tether.Error, match="does not own"):
        w.free()
    del w
    a.free()


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_atomics_integer(dtype):
    a = tether.zeros(4, dtype)
    x = a[2]
    assert tether.fetch_add(x, 5, 0) == 0
    tether.add(x, 2, 0)
    tether.inc(x, 0)
    assert tether.fetch_inc(x, 0) == 8
    assert tether.fetch(x, 0) == 9
    assert tether.compare_swap(x, 9, 3, 0) == 9
    assert tether.compare_swap(x, 9, 4, 0) == 3  # no swap
    assert tether.swap(x, 12, 0) == 3
    tether.set(x, 0b1100, 0)
    assert tether.fetch_and(x, 0b0101, 0) == 0b1100
    assert tether.fetch_or(x, 0b0011, 0) == 0b0100
    assert tether.fetch_xor(x, 0b1111, 0) == 0b0111
    tether.and_(x, 0b1110, 0)
    tether.or_(x, 0b10000, 0)
    tether.xor(x, 1, 0)
    assert tether.fetch(x, 0) == (((0b1000 & 0b1110) | 0b10000) ^ 1)
    v = a.numpy()
    assert v[0] == 0 and v[1] == 0 and v[3] == 0
    del v
    a.free()


def test_atomics_float_and_bad():
    a = tether.zeros(2, "float64")
    tether.set(a[0], 2.5, 0)
    assert tether.swap(a[0], 1.5, 0) == 2.5 and tether.fetch(a[0], 0) == 1.5
    with pytest.raises(tether.Error, match="not allowed"):
        tether.add(a[0], 1, 0)  # ADD on a double: rejected by the C library
    with pytest.raises(tether.Error, match="one element"):
        tether.fetch(a, 0)
    with pytest.raises(tether.Error, match="INVALID_PE"):
        tether.fetch(a[0], 3)
    b = tether.zeros(2, "int8")
    with pytest.raises(tether.Error, match="no atomic or wait form"):
        tether.fetch(b[0], 0)
    a.free()
    b.free()


def test_signals_and_waits():
    flags = tether.zeros(2, "uint64")
    tether.signal_op(flags[0], 5, 0)
    tether.signal_op(flags[0], 2, 0, op="add")
    assert tether.signal_fetch(flags[0]) == 7
    assert tether.signal_wait_until(flags[0], ">=", 7) == 7
    data = tether.zeros(3, "int32")
    tether.put_signal(data, np.arange(3, dtype="int32"), flags[1], 1, 0)
    assert tether.signal_wait_until(flags[1], "==", 1) == 1
    assert list(data.numpy()) == [0, 1, 2]
    assert tether.test(data[2], "==", 2) and not tether.test(data[2], ">", 2)
    tether.wait_until(data[1], "==", 1)
    with pytest.raises(tether.Error, match="uint64"):
        tether.signal_op(data[0], 1, 0)
    with pytest.raises(tether.Error, match="comparison"):
        tether.wait_until(data[1], "~", 1)
    with pytest.raises(tether.Error) as e:
        tether.wait_until(data[1], "==", 42)  # nobody writes it: TETHER_TIMEOUT (2 s here) ends the wait
    assert e.value.status_name == "TETHER_ERR_TIMEOUT"
    data.free()
    flags.free()


def test_stream_argument():
    a = tether.zeros(4, "float64")
    with pytest.raises(tether.Error, match="not a CUDA stream"):
        tether.put(a, np.zeros(4), 0, stream="s")
    info = tether.build_info()
    if not (info["cuda"] and info["gpus_visible"]):
        with pytest.raises(tether.Error) as e:  # a clear error on CPU builds / without a GPU
            tether.put(a, np.zeros(4), 0, stream=0)
        assert e.value.status_name == "TETHER_ERR_UNSUPPORTED"

    class Proto:
        def __cuda_stream__(self):
            return (0, 0)

    from tether._api import _stream_handle
    assert _stream_handle(Proto()) == 0 and _stream_handle(17) == 17
    a.free()


def test_torch_cpu_if_present():
    torch = pytest.importorskip("torch")
    a = tether.zeros(5, "float32")
    t = torch.from_dlpack(a)
    t += 1
    src = torch.arange(5, dtype=torch.float32)
    tether.put(a[::2], src[:3], 0)
    assert t.tolist() == [0.0, 1.0, 1.0, 1.0, 2.0]
    del t
    a.free()


def test_teams_alone():
    w, s = tether.team_world(), tether.team_shared()
    assert isinstance(w, tether.Team) and w.predefined and s.predefined
    assert (w.my_pe(), w.n_pes(), w.index(), s.index(), w.world_pe(0), w.translate_pe(0, s)) == (0, 1, 0, 1, 0, 0)
    with w.split_strided(0, 1, 1) as t:
        assert (t.my_pe(), t.n_pes(), t.world_pe(0)) == (0, 1, 0) and not t.predefined
        t.sync()
        t.barrier()
    assert t.destroyed and "destroyed" in repr(t)
    with pytest.raises(tether.Error, match="destroyed"):
        t.n_pes()
    with pytest.raises(tether.Error, match="predefined"):
        s.destroy()
    with pytest.raises(tether.Error) as e:
        w.world_pe(1)
    assert e.value.status_name == "TETHER_ERR_INVALID_PE"


def test_after_finalize_is_an_error():
    # Own process state: run last (pytest keeps file order); re-initialises for the module fixture's finalize.
    a = tether.zeros(2, "int64")
    team = tether.team_world().split_strided(0, 1, 1)
    tether.finalize()
    with pytest.raises(tether.Error, match="finalized"):
        team.barrier()
    with pytest.raises(tether.Error, match="finalized"):
        team.my_pe()
    with pytest.raises(tether.Error, match="not initialised"):
        tether.my_pe()
    with pytest.raises(tether.Error, match="finalized"):
        tether.put(a, np.zeros(2, "int64"), 0)
    with pytest.raises(tether.Error, match="finalized"):
        a.numpy()
    tether.init(config={"TETHER_TIMEOUT": "2"})
