"""GPU tests of the tether package: DEVICE-segment arrays with torch and CuPy tensors, one GPU per PE.
    tetherrun -n 2 python -m pytest -q -rs python/tests/test_gpu.py      (ctest: python_gpu_{2,4}pe, label gpu)
Every test skips without a CUDA build of the package, without a GPU for every PE, or without its framework."""
import os

import numpy as np
import pytest

import tether


def _gpu_ready():
    info = tether.build_info()
    return info["cuda"] and info["gpus_visible"] > 0


@pytest.fixture(scope="module", autouse=True)
def world():
    if not _gpu_ready():
        pytest.skip("needs a CUDA build of the package (TETHER_PYTHON_CUDA) and a visible GPU")
    # one GPU per PE: select it before tether (and torch/cupy) create contexts
    local = int(os.environ.get("TETHER_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    ngpu = tether.build_info()["gpus_visible"]
    torch = _maybe("torch")
    if torch is not None:
        torch.cuda.set_device(local % ngpu)
    cupy = _maybe("cupy")
    if cupy is not None:
        cupy.cuda.Device(local % ngpu).use()
    w = tether.init().world
    yield w
    tether.finalize()


def _maybe(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def me_n():
    return tether.my_pe(), tether.n_pes()


def test_device_array_interfaces():
    me, n = me_n()
    a = tether.zeros((4, 8), "float32", device="cuda")
    assert a.device == "cuda" and a.__dlpack_device__()[0] == 2
    cai = a.__cuda_array_interface__
    assert cai["data"][0] == a.address and cai["shape"] == (4, 8)
    with pytest.raises(AttributeError):
        a.__array_interface__
    del cai
    tether.barrier()


def test_torch_ring_put_get():
    torch = pytest.importorskip("torch")
    me, n = me_n()
    a = tether.zeros((4, 8), "float32", device="cuda")
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.data_ptr() == a.address and float(t.abs().sum()) == 0.0
    assert t.device.index == torch.cuda.current_device() == a.allocation.device  # DLPack names the PE's GPU
    src = torch.full((4,), float(me + 1), device="cuda")
    torch.cuda.synchronize()
    tether.put(a[:, 3], src, (me + 1) % n)  # strided column of GPU memory from a GPU tensor
    tether.barrier()
    torch.cuda.synchronize()
    assert (t[:, 3] == (me - 1) % n + 1).all() and float(t.sum()) == 4 * ((me - 1) % n + 1)
    out = torch.zeros((4, 8), device="cuda")
    tether.get(out, a, (me + 1) % n)
    assert (out[:, 3] == me + 1).all()
    host = np.zeros(8, "float32")
    tether.get(host, a[1], me)  # GPU symmetric -> host buffer
    assert host[3] == (me - 1) % n + 1
    del t
    tether.barrier()
    a.free()


def test_torch_stream_put_and_signal():
    torch = pytest.importorskip("torch")
    me, n = me_n()
    a = tether.zeros(1024, "float32", device="cuda")
    sig = tether.zeros(1, "uint64", device="cuda")
    s = torch.cuda.Stream()
    src = torch.arange(1024, dtype=torch.float32, device="cuda") + me
    with torch.cuda.stream(s):
        tether.put_signal(a, src, sig[0], 1, (me + 1) % n, stream=s)
        tether.signal_wait_until(sig[0], ">=", 1, stream=s)
    s.synchronize()
    t = torch.from_dlpack(a)
    assert (t == torch.arange(1024, device="cuda") + (me - 1) % n).all()
    del t
    tether.put(a[:4], src[:4], (me + 1) % n, stream=s)
    tether.quiet(stream=s)
    s.synchronize()
    tether.barrier()
    a.free()
    sig.free()


def test_cupy_put_get_and_atomics():
    cupy = pytest.importorskip("cupy")
    me, n = me_n()
    a = tether.zeros((8, 8), "int64", device="cuda")
    c = cupy.from_dlpack(a)
    assert c.data.ptr == a.address
    tether.put(a[me % 8, ::2], cupy.full(4, me + 1, dtype=cupy.int64), (me + 1) % n)
    tether.barrier()
    prev = (me - 1) % n
    assert int(c[prev % 8, ::2].sum()) == 4 * (prev + 1)
    assert tether.fetch_add(a[7, 7], 1, 0) >= 0
    tether.barrier()
    assert tether.fetch(a[7, 7], 0) == n
    s = cupy.cuda.Stream()
    tether.put(a[0, :2], cupy.ones(2, dtype=cupy.int64), me, stream=s)  # .ptr handle
    s.synchronize()
    del c
    tether.barrier()
    a.free()


def test_torch_collectives_host_and_stream():
    torch = pytest.importorskip("torch")
    me, n = me_n()
    a = tether.zeros(1000, "float32", device="cuda")
    g = tether.zeros(1000 * n, "float32", device="cuda")
    ta = torch.from_dlpack(a)
    base = torch.arange(1000, dtype=torch.float32, device="cuda")
    ta.copy_(base + me)
    torch.cuda.synchronize()
    tether.allreduce(a)  # blocking, in place: on GPU memory the C API's GPU engine
    assert torch.equal(ta, n * base + n * (n - 1) // 2)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        ta.fill_(me + 1)
        tether.allgather(g, a, stream=s)  # enqueued behind the fill
        tether.allreduce(a, op="max", stream=s)
    s.synchronize()
    want = torch.arange(1, n + 1, dtype=torch.float32, device="cuda").repeat_interleave(1000)
    assert torch.equal(torch.from_dlpack(g), want) and torch.equal(ta, torch.full_like(ta, n))
    del ta
    tether.barrier()
    g.free()
    a.free()
