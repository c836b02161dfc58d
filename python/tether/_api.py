"""Module-level API on the current world (tether.init() makes it; one per process)."""
import os as _os
import secrets as _secrets
import socket as _socket
import sys as _sys

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


def init(config=None, *, comm=None, store=None, rank=None, size=None, prefix="tether/", host=None):
    """Collective: starts tether on every PE of the job; returns a session (`with tether.init(): ...` finalizes).

    tether.init()             the job from the environment: tetherrun, torchrun, mpirun/srun (PMIx), alone: 1 PE
    tether.init(comm=c)       every rank of the mpi4py communicator c (PE = rank in c; tether_init_mpi): no bootstrap
                              address or port; later calls do not use MPI
    tether.init(store=s)      torch.distributed's rendezvous reused: s is any store with set(key, value) and
                              get(key) -> bytes (TCPStore, FileStore, the default store of init_process_group);
                              rank/size (default: RANK, WORLD_SIZE) give the position; rank 0 listens on a free port
                              and publishes "host:port" and a random job secret under `prefix` (docs/python.md)
    config: a dict {"TETHER_TIMEOUT": 30, ...} or a list of "NAME=value" overriding the environment."""
    global _current
    if _current is not None and _current.alive:
        raise Error(INVALID_ARG, "tether.init(): already initialised (finalize() first)")
    if isinstance(config, dict):
        config = ["%s=%s" % (k, v) for k, v in config.items()]
    config = list(config or [])
    if comm is not None and store is not None:
        raise Error(INVALID_ARG, "tether.init(): give comm= (MPI) or store= (torch.distributed), not both")
    if comm is None and store is None and (rank is not None or size is not None or host is not None):
        raise Error(INVALID_ARG, "tether.init(): rank=, size= and host= go with store=; without it the launcher's "
                                 "environment gives them")
    if comm is not None:
        if rank is not None or size is not None or host is not None:
            raise Error(INVALID_ARG, "tether.init(comm=...): the communicator gives rank and size; leave rank=, "
                                     "size= and host= unset")
        _current = _tether.World(config, mpi_comm=_mpi_comm_address(comm))
    elif store is not None:
        _current = _init_from_store(store, rank, size, prefix, host, config)
    else:
        _current = _tether.World(config)
    return _Session(_current)


def _mpi_comm_address(comm):
    """The address of comm's MPI_Comm handle (mpi4py's MPI._addressof). mpi4py is never imported here: a caller that
    has a communicator has imported it already."""
    mpi = _sys.modules.get("mpi4py.MPI")
    if mpi is None or not isinstance(comm, mpi.Comm):
        raise Error(INVALID_ARG, "tether.init(comm=%r): not an mpi4py communicator (from mpi4py import MPI; "
                                 "tether.init(comm=MPI.COMM_WORLD))" % (comm,))
    if comm == mpi.COMM_NULL:
        raise Error(INVALID_ARG, "tether.init(comm=MPI.COMM_NULL): a null communicator")
    if not isinstance(comm, mpi.Intracomm):
        raise Error(INVALID_ARG, "tether.init(comm=...): not an intracommunicator (%s); give an intracommunicator "
                                 "(e.g. comm.Merge())" % type(comm).__name__)
    if not mpi.Is_initialized() or mpi.Is_finalized():
        raise Error(INVALID_ARG, "tether.init(comm=...): MPI is not initialised or already finalized")
    return mpi._addressof(comm)


# ---- init from a torch.distributed store --------------------------------------------------------------------------

_store_inits = 0  # store inits made by this process: the n of the key "<prefix>bootstrap.<n>" (each init a new key)


def _env_position(value, var, what):
    if value is None:
        text = _os.environ.get(var)
        if text is None:
            raise Error(INVALID_ARG, "tether.init(store=...): %s= not given and %s not set (torchrun sets it)"
                                     % (what, var))
        try:
            value = int(text)
        except ValueError:
            raise Error(INVALID_ARG, "tether.init(store=...): %s=%r is not an integer" % (var, text))
    if isinstance(value, bool) or not isinstance(value, int):
        raise Error(INVALID_ARG, "tether.init(store=...): %s=%r is not an integer" % (what, value))
    return value


def _store_host():
    """The host name other ranks use to reach rank 0: MASTER_ADDR (torchrun's rendezvous host) when set, else this
    host's name when it resolves (the first rule of tether's own offer, src/bootstrap/offer.cpp)."""
    addr = _os.environ.get("MASTER_ADDR")
    if addr:
        return addr
    name = _socket.gethostname()
    try:
        _socket.getaddrinfo(name, None, _socket.AF_INET, _socket.SOCK_STREAM)
    except OSError as e:
        raise Error(INVALID_ARG, "tether.init(store=...): MASTER_ADDR is not set and this host's name %r does not "
                                 "resolve (%s); pass host= (an address the other ranks reach)" % (name, e))
    return name


def _as_text(value, key):
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str):
        raise Error(INVALID_ARG, "tether.init(store=...): the store's get(%r) returned %s, not bytes or str"
                                 % (key, type(value).__name__))
    return value


def _init_from_store(store, rank, size, prefix, host, config):
    """Rank 0 listens on a free port of every interface and publishes "host:port\nsecret" under
    "<prefix>bootstrap.<n>"; the others get it (the store's get blocks under its own timeout); then every rank starts
    with tether_init_attr(rank, size, address, secret[, rank 0's socket]). No TETHER_* bootstrap variable is read."""
    global _store_inits
    for method in ("set", "get"):
        if not callable(getattr(store, method, None)):
            raise Error(INVALID_ARG, "tether.init(store=%r): no %s() method (a torch.distributed.Store-like object "
                                     "with set(key, value) and get(key) -> bytes)" % (store, method))
    if not isinstance(prefix, str):
        raise Error(INVALID_ARG, "tether.init(store=...): prefix=%r is not a str" % (prefix,))
    rank = _env_position(rank, "RANK", "rank")
    size = _env_position(size, "WORLD_SIZE", "size")
    if size < 1 or not 0 <= rank < size:
        raise Error(INVALID_ARG, "tether.init(store=...): rank %d of size %d (want 0 <= rank < size)" % (rank, size))
    key = "%sbootstrap.%d" % (prefix, _store_inits)
    _store_inits += 1
    if size == 1:
        return _tether.World(config, rank=0, size=1)
    if rank != 0:
        value = _as_text(store.get(key), key)
        addr, sep, secret = value.partition("\n")
        if not sep or not addr or not secret:
            raise Error(INVALID_ARG, "tether.init(store=...): key %r holds %r, not rank 0's \"host:port\\nsecret\""
                                     % (key, value[:80]))
        return _tether.World(config, rank=rank, size=size, bootstrap_addr=addr, job_secret=secret)
    # rank 0: a key that is already there comes from an earlier job or init with this store and prefix; the others may
    # have read it already, so it is an error, not something to overwrite (torch's stores have check())
    check = getattr(store, "check", None)
    if callable(check) and check([key]):
        raise Error(INVALID_ARG, "tether.init(store=...): the store already holds %r (left by an earlier job or init "
                                 "with this store): the other ranks would use a stale address; use a fresh store or "
                                 "another prefix= on every rank" % key)
    host = host or _store_host()
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.bind(("", 0))
        sock.listen(min(size, 4096))
        sock.setblocking(False)
        addr, secret = "%s:%d" % (host, sock.getsockname()[1]), _secrets.token_hex(32)
        store.set(key, ("%s\n%s" % (addr, secret)).encode())
    except BaseException:
        sock.close()
        raise
    # tether owns the socket from here: its bootstrap closes it when the rendezvous ends or fails (a tether_init_attr
    # that fails before the bootstrap starts, e.g. on a bad config entry, leaves it open until the process exits)
    return _tether.World(config, rank=0, size=size, bootstrap_addr=addr, job_secret=secret, listen_fd=sock.detach())


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


def team_world():
    """The world team (tether.Team): every PE, team PE = world PE. Predefined: destroy() refuses it."""
    return world().team_world()


def team_shared():
    """The shared team (tether.Team): the PEs whose host symmetric memory this PE can load and store, in world order
    (this host's PEs; only this PE when same-host PEs go through a network path). Predefined."""
    return world().team_shared()


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


# ---- team collectives (docs/python.md "Collectives") --------------------------------------------------------------

# tether_red_op_t; _COLL: the extension's collective kinds.
_RED_OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "and": 4, "or": 5, "xor": 6}
_BROADCAST, _REDUCE, _ALLREDUCE, _ALLGATHER, _REDUCE_SCATTER, _ALLTOALL = range(6)


def _red_op(op):
    if op in _RED_OPS:
        return _RED_OPS[op]
    raise Error(INVALID_ARG, "reduction op %r: use one of %s" % (op, ", ".join(_RED_OPS)))


def _coll(kind, call, dest, src, op, root, team, stream):
    _symmetric(dest, call)
    _symmetric(src, call)
    t = team_world() if team is None else team
    if not isinstance(t, _tether.Team):
        raise Error(INVALID_ARG, "%s: team=%r is not a tether.Team" % (call, t))
    if stream is None:
        _tether.team_coll(t, kind, dest, src, op, root)
    else:
        _tether.team_coll(t, kind, dest, src, op, root, _stream_handle(stream), True)


def broadcast(dest, src, root, team=None, stream=None):
    """Collective over team (default: the world): dest on every member <- src of team PE root. dest and src are
    contiguous symmetric arrays of one dtype and size (in place: the same array). Blocking; with stream=, enqueued on
    it (GPU memory; tether_team_broadcast_on_stream)."""
    _coll(_BROADCAST, "broadcast", dest, src, 0, root, team, stream)


def reduce(dest, src, root, op="sum", team=None, stream=None):
    """Collective: dest of team PE root <- op over every member's src, element by element (others' dest untouched).
    op: 'sum', 'prod', 'min', 'max', and 'and', 'or', 'xor' on integer dtypes."""
    _coll(_REDUCE, "reduce", dest, src, _red_op(op), root, team, stream)


def allreduce(dest, src=None, op="sum", team=None, stream=None):
    """Collective: dest on every member <- op over every member's src (src=None: in place, src = dest)."""
    _coll(_ALLREDUCE, "allreduce", dest, dest if src is None else src, _red_op(op), 0, team, stream)


def allgather(dest, src, team=None, stream=None):
    """Collective: dest (n_pes times src's elements, in team order) <- every member's src."""
    _coll(_ALLGATHER, "allgather", dest, src, 0, 0, team, stream)


def reduce_scatter(dest, src, op="sum", team=None, stream=None):
    """Collective: dest of team PE m <- op over every member's block m of src (src holds n_pes times dest's
    elements)."""
    _coll(_REDUCE_SCATTER, "reduce_scatter", dest, src, _red_op(op), 0, team, stream)


def alltoall(dest, src, team=None, stream=None):
    """Collective: block m of dest <- block my_pe of team PE m's src (n_pes equal blocks; dest and src do not
    overlap)."""
    _coll(_ALLTOALL, "alltoall", dest, src, 0, 0, team, stream)
