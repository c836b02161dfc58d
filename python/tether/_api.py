"""Module-level API on the current world (tether.init() makes it; one per process)."""
from . import _tether
from ._array import SymmetricArray, typestr, _c_strides, _SEG_HOST, _SEG_DEVICE
from ._errors import Error, INVALID_ARG, UNSUPPORTED

SIGNAL_SET, SIGNAL_ADD = 0, 1
CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE = range(6)
_CMPS = {"==": CMP_EQ, "!=": CMP_NE, ">": CMP_GT, ">=": CMP_GE, "<": CMP_LT, "<=": CMP_LE,
         "eq": CMP_EQ, "ne": CMP_NE, "gt": CMP_GT, "ge": CMP_GE, "lt": CMP_LT, "le": CMP_LE}
# tether_amo_t
(_FETCH, _SET, _SWAP, _CSWAP, _INC, _FETCH_INC, _ADD, _FETCH_ADD, _AND, _FETCH_AND, _OR, _FETCH_OR, _XOR,
 _FETCH_XOR) = range(14)

_current = None


class _Session:
    """What init() returns: `with tether.init():` finalizes at the end of the block."""

    def __init__(self, w):
        self.world = w

    def __enter__(self):
        return self.world

    def __exit__(self, *exc):
        if self.world.alive:
            finalize()
        return False


def init(config=None):
    """Collective: starts tether on every PE of the job (tetherrun's environment; alone: a job of 1 PE). config: a
    dict {"TETHER_TIMEOUT": 30, ...} or a list of "NAME=value" overriding the environment."""
    global _current
    if _current is not None and _current.alive:
        raise Error(INVALID_ARG, "tether.init(): already initialised (finalize() first)")
    if isinstance(config, dict):
        config = ["%s=%s" % (k, v) for k, v in config.items()]
    _current = _tether.World(list(config or []))
    return _Session(_current)


def finalize():
    """Collective: completes outstanding operations and releases the symmetric heap. Refused (tether.Error) while
    views of symmetric arrays (numpy/torch/cupy through DLPack or the array interfaces) are alive."""
    world().finalize()


def world():
    if _current is None or not _current.alive:
        raise Error(INVALID_ARG, "tether is not initialised (tether.init() first) or already finalized")
    return _current


def is_initialized():
    return _current is not None and _current.alive


def version():
    """(major, minor, patch) of the libtether that is loaded."""
    return _tether.version()


def build_info():
    """What this build has: {'cuda', 'ucx', 'sanitizers', 'ucx_version', 'gpus_visible'}."""
    return _tether.build_info()


def my_pe():
    return world().my_pe


def n_pes():
    return world().n_pes


def local_pe():
    return world().local_pe


def local_size():
    return world().local_size


def barrier(stream=None):
    """Collective: completes this PE's operations (quiet), then synchronises all PEs. stream=: the on-stream form."""
    if stream is None:
        world().barrier()
    else:
        world().barrier_on_stream(_stream_handle(stream))


def sync():
    world().sync()


def quiet(stream=None):
    if stream is None:
        world().quiet()
    else:
        world().quiet_on_stream(_stream_handle(stream))


def fence():
    world().fence()


# ---- allocation ---------------------------------------------------------------------------------------------------

def _kind(device):
    if device in ("cpu", "host"):
        return _SEG_HOST
    if device == "cuda" or (isinstance(device, str) and device.startswith("cuda")):
        return _SEG_DEVICE
    dev = str(device)
    if dev.startswith("cuda"):
        return _SEG_DEVICE
    if dev == "cpu":
        return _SEG_HOST
    raise Error(INVALID_ARG, "device %r: use 'cpu' (host symmetric heap) or 'cuda' (GPU symmetric heap)" % (device,))


def _shape(shape):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for d in shape:
        d = int(d)
        if d < 0:
            raise Error(INVALID_ARG, "negative dimension %d in shape %s" % (d, shape))
        out.append(d)
    return out


def empty(shape, dtype="float64", device="cpu"):
    """Collective: a new symmetric array (uninitialised), on the host heap (device='cpu') or the GPU heap ('cuda')."""
    return _new(shape, dtype, device, False)


def zeros(shape, dtype="float64", device="cpu"):
    """Collective: a new symmetric array filled with zeros on every PE (ends with a barrier)."""
    return _new(shape, dtype, device, True)


def _new(shape, dtype, device, zero):
    w = world()
    ts = typestr(dtype)
    shape = _shape(shape)
    itemsize = int(ts[2:])
    n = itemsize
    for d in shape:
        n *= d
    alloc = w.alloc(max(n, itemsize), _kind(device), 0, zero)
    return SymmetricArray(alloc, 0, shape, _c_strides(shape, itemsize), ts)


def free(a):
    """Collective: a.free()."""
    a.free()


# ---- streams ------------------------------------------------------------------------------------------------------

def _stream_handle(stream):
    """cudaStream_t as an int from an int handle, an object with __cuda_stream__() (CUDA stream protocol: (version,
    handle)), .cuda_stream (torch.cuda.Stream) or .ptr (cupy.cuda.Stream)."""
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        v = proto() if callable(proto) else proto
        return int(v[1] if isinstance(v, tuple) else v)
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    raise Error(INVALID_ARG, "stream=%r: not a CUDA stream (an int handle, an object with __cuda_stream__, "
                             "torch.cuda.Stream or cupy.cuda.Stream)" % (stream,))


_CONVERT = (list, tuple, int, float, complex, bool)
_CONVERT_TYPES = frozenset(_CONVERT)
_fast_put, _fast_get = _tether.put, _tether.get


def _local(src, like):
    """Lists, tuples and scalars as a numpy array of the symmetric side's dtype; anything else as it is (the
    extension reads it through the buffer protocol or DLPack, and says so when it can do neither)."""
    if not isinstance(src, _CONVERT):
        return src
    try:
        import numpy
        return numpy.ascontiguousarray(src, dtype=like.dtype)
    except ImportError:
        raise Error(INVALID_ARG, "a %s as local buffer needs numpy; pass an array" % type(src).__name__)
    except (TypeError, ValueError) as e:
        raise Error(INVALID_ARG, "local buffer %r is not an array of %s: %s" % (src, like.typestr, e))


def _symmetric(a, call):
    if not isinstance(a, SymmetricArray):
        raise Error(INVALID_ARG, "%s: the symmetric side must be a tether.SymmetricArray (made by tether.empty/zeros "
                                 "or tether.from_address), got %s" % (call, type(a).__name__))
    return a


# ---- RMA ----------------------------------------------------------------------------------------------------------

def put(dest, src, pe, stream=None):
    """dest (a SymmetricArray or view, e.g. a[:, 3]) on PE pe <- src (local: numpy/torch/cupy/buffer). Same dtype
    and element count; strided sides travel as one typed put. Complete on return; with stream=, enqueued on it."""
    if stream is None and type(src) not in _CONVERT_TYPES:  # the fast path: one call into the extension
        try:
            return _fast_put(dest, src, pe)
        except TypeError:
            _symmetric(dest, "put")  # names the problem when dest is no SymmetricArray
            raise
    if not isinstance(dest, SymmetricArray):
        _symmetric(dest, "put")
    if isinstance(src, _CONVERT):
        src = _local(src, dest)
    if stream is None:
        _tether.put(dest, src, pe)
    else:
        _tether.put(dest, src, pe, False, _stream_handle(stream), True)


def get(dest, src, pe, stream=None):
    """dest (local, writable) <- src (a SymmetricArray or view) on PE pe."""
    if stream is None:
        try:
            return _fast_get(dest, src, pe)
        except TypeError:
            _symmetric(src, "get")
            raise
    if not isinstance(src, SymmetricArray):
        _symmetric(src, "get")
    if stream is None:
        _tether.get(dest, src, pe)
    else:
        _tether.get(dest, src, pe, False, _stream_handle(stream), True)


def put_nbi(dest, src, pe):
    """Non-blocking put: complete at quiet()/barrier(); src must not change before then."""
    _tether.put(_symmetric(dest, "put_nbi"), _local(src, dest), pe, True)


def get_nbi(dest, src, pe):
    _tether.get(dest, _symmetric(src, "get_nbi"), pe, True)


def putmem(dest_address, src_address, nbytes, pe):
    """Raw bytes by address (no checks in Python; tether checks the symmetric address)."""
    _tether.putmem(world(), dest_address, src_address, nbytes, pe)


def getmem(dest_address, src_address, nbytes, pe):
    _tether.getmem(world(), dest_address, src_address, nbytes, pe)


# ---- signals and waits --------------------------------------------------------------------------------------------

def _cmp(cmp):
    if isinstance(cmp, int):
        return cmp
    if cmp in _CMPS:
        return _CMPS[cmp]
    raise Error(INVALID_ARG, "comparison %r: use one of %s" % (cmp, sorted(k for k in _CMPS if len(k) <= 2)))


def _sigop(op):
    if op in (SIGNAL_SET, "set"):
        return SIGNAL_SET
    if op in (SIGNAL_ADD, "add"):
        return SIGNAL_ADD
    raise Error(INVALID_ARG, "signal op %r: use 'set' or 'add'" % (op,))


def put_signal(dest, src, sig, value, pe, op="set", nbi=False, stream=None):
    """Contiguous put, then the signal update (sig: a uint64 element, e.g. flags[0]) visible after the data."""
    _symmetric(dest, "put_signal")
    h = 0 if stream is None else _stream_handle(stream)
    _tether.put_signal(dest, _local(src, dest), _symmetric(sig, "put_signal"), value, _sigop(op), pe, nbi, h,
                       stream is not None)


def signal_op(sig, value, pe, op="set", stream=None):
    h = 0 if stream is None else _stream_handle(stream)
    _tether.signal_op(_symmetric(sig, "signal_op"), value, _sigop(op), pe, h, stream is not None)


def signal_fetch(sig):
    return _tether.signal_fetch(_symmetric(sig, "signal_fetch"))


def signal_wait_until(sig, cmp, value, stream=None):
    """Waits (bounded by TETHER_TIMEOUT) until this PE's sig cmp value; returns the value seen."""
    h = 0 if stream is None else _stream_handle(stream)
    return _tether.signal_wait_until(_symmetric(sig, "signal_wait_until"), _cmp(cmp), value, h, stream is not None)


def wait_until(ivar, cmp, value):
    """Waits (bounded by TETHER_TIMEOUT) until this PE's element ivar (e.g. a[2]) cmp value."""
    _tether.wait_until(_symmetric(ivar, "wait_until"), _cmp(cmp), value)


def test(ivar, cmp, value):
    return _tether.test(_symmetric(ivar, "test"), _cmp(cmp), value)


# ---- atomics: on one element (a[i]) of PE pe; fetching forms return the old value ----------------------------------

def _amo(dest, op, value, cond, pe):
    return _tether.atomic(_symmetric(dest, "atomic"), op, value, cond, pe)


def fetch(dest, pe):
    return _amo(dest, _FETCH, None, None, pe)


def set(dest, value, pe):  # noqa: A001 (OpenSHMEM's name)
    _amo(dest, _SET, value, None, pe)


def swap(dest, value, pe):
    return _amo(dest, _SWAP, value, None, pe)


def compare_swap(dest, cond, value, pe):
    """Stores value if the element equals cond; returns the old value."""
    return _amo(dest, _CSWAP, value, cond, pe)


def inc(dest, pe):
    _amo(dest, _INC, None, None, pe)


def fetch_inc(dest, pe):
    return _amo(dest, _FETCH_INC, None, None, pe)


def add(dest, value, pe):
    _amo(dest, _ADD, value, None, pe)


def fetch_add(dest, value, pe):
    return _amo(dest, _FETCH_ADD, value, None, pe)


def and_(dest, value, pe):
    _amo(dest, _AND, value, None, pe)


def fetch_and(dest, value, pe):
    return _amo(dest, _FETCH_AND, value, None, pe)


def or_(dest, value, pe):
    _amo(dest, _OR, value, None, pe)


def fetch_or(dest, value, pe):
    return _amo(dest, _FETCH_OR, value, None, pe)


def xor(dest, value, pe):
    _amo(dest, _XOR, value, None, pe)


def fetch_xor(dest, value, pe):
    return _amo(dest, _FETCH_XOR, value, None, pe)
