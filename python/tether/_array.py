"""SymmetricArray: a typed, strided view of a symmetric allocation that speaks DLPack and the array interfaces."""

from . import _tether
from ._errors import Error, INVALID_ARG

# DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool) <-> numpy typestr kind letters.
_KIND_TO_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_CODE_TO_KIND = {v: k for k, v in _KIND_TO_CODE.items()}
_NAMES = {
    "bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4",
    "int64": "<i8", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8",
    "complex128": "<c16", "float": "<f8", "int": "<i8", "double": "<f8", "half": "<f2",
}
_SEG_HOST, _SEG_DEVICE = 1, 2
_TYPESTRS = {}  # dtype -> typestr, for the dtypes seen (views and new arrays are made often)


def typestr(dtype):
    """numpy-style type string ('<f8') of a dtype given as a name ('float64'), a numpy dtype or type, or a torch
    dtype."""
    try:
        return _TYPESTRS[dtype]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    ts = _typestr(dtype)
    if len(ts) >= 3 and ts[0] in "<|" and ts[1] in _KIND_TO_CODE and ts[2:].isdigit() and int(ts[2:]) in (1, 2, 4, 8, 16):
        try:
            _TYPESTRS[dtype] = ts
        except TypeError:
            pass
        return ts
    raise Error(INVALID_ARG, "unknown dtype %r (use a name such as 'float64', a numpy or a torch dtype)" % (dtype,))


def _typestr(dtype):
    if isinstance(dtype, str):
        if dtype in _NAMES:
            return _NAMES[dtype]
        if len(dtype) >= 2 and dtype.lstrip("<>|=")[:1] in _KIND_TO_CODE:
            s = dtype.lstrip("<>|=")
            return ("|" if s[1:] == "1" else "<") + s
    elif hasattr(dtype, "str") and isinstance(dtype.str, str):  # numpy.dtype
        return dtype.str
    else:
        name = str(dtype)
        if name.startswith("torch."):
            return _typestr(name[len("torch."):])
        try:
            import numpy
            return numpy.dtype(dtype).str
        except Exception:
            pass
    return ""


def _code_bits(ts):
    return _KIND_TO_CODE[ts[1]], int(ts[2:]) * 8


class SymmetricArray(_tether.ArrayBase):
    """An n-dimensional array in the symmetric heap: the same object exists on every PE, and put/get/atomics name
    it together with a PE. Made by tether.empty/zeros (owners) or by indexing one (views of the same allocation).

    Zero-copy with numpy.from_dlpack / torch.from_dlpack / cupy.from_dlpack (__dlpack__), numpy (__array_interface__,
    CPU) and CuPy/Numba (__cuda_array_interface__, GPU). free() is collective and is refused while such views live."""

    def __init__(self, allocation, offset, shape, strides, dtype):
        super().__init__()
        ts = typestr(dtype)
        code, bits = _code_bits(ts)
        self._init(allocation, offset, [int(s) for s in shape], [int(s) for s in strides], code, bits)
        self._typestr = ts

    def _view(self, offset, shape, strides):
        """A view of the same allocation and dtype (checked by _init to stay inside the allocation)."""
        v = SymmetricArray.__new__(SymmetricArray)
        _tether.ArrayBase.__init__(v)
        v._init_view(self, offset, shape, strides)
        v._typestr = self._typestr
        return v

    # ---- description ---------------------------------------------------------------------------------------------
    @property
    def typestr(self):
        return self._typestr

    @property
    def dtype(self):
        """numpy dtype when numpy is importable, else the type string."""
        try:
            import numpy
            return numpy.dtype(self._typestr)
        except ImportError:
            return self._typestr

    @property
    def device(self):
        return "cuda" if self.allocation.kind == _SEG_DEVICE else "cpu"

    @property
    def strides(self):
        return tuple(self._strides)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d symmetric array")
        return self.shape[0]

    def __repr__(self):
        return "SymmetricArray(shape=%s, dtype=%s, device=%s, address=0x%x)" % (
            self.shape, self._typestr, self.device, self.allocation.address + self._offset)

    # ---- views ---------------------------------------------------------------------------------------------------
    def __getitem__(self, key):
        """Basic indexing (integers, slices with steps, one ...): a view of the same allocation. Out-of-range
        integers and too many indices raise IndexError."""
        v = SymmetricArray.__new__(SymmetricArray)
        _tether.ArrayBase.__init__(v)
        v._init_index(self, key)  # the index arithmetic, in the extension
        v._typestr = self._typestr
        return v

    def reshape(self, *shape):
        """A view with another shape (contiguous arrays only)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = list(shape)
        if shape.count(-1) == 1:
            known = 1
            for d in shape:
                known *= d if d != -1 else 1
            shape[shape.index(-1)] = self.size // known if known else 0
        n = 1
        for d in shape:
            n *= d
        if n != self.size:
            raise Error(INVALID_ARG, "reshape: %d elements cannot take shape %s" % (self.size, tuple(shape)))
        if not self.is_contiguous:
            raise Error(INVALID_ARG, "reshape: only contiguous arrays can be reshaped")
        return SymmetricArray(self.allocation, self._offset, shape, _c_strides(shape, self.itemsize), self._typestr)

    # ---- interchange ---------------------------------------------------------------------------------------------
    def __dlpack__(self, **kwargs):
        return self._export().__dlpack__(**{k: v for k, v in kwargs.items() if v is not None and k != "stream"})

    def __dlpack_device__(self):
        return (2, self.allocation.device) if self.device == "cuda" else (1, 0)  # kDLCUDA / kDLCPU

    def _interface(self):
        self._mark_interfaced()  # the consumer keeps this object: it counts as a live view from now on
        c_order = self.is_contiguous
        return {"shape": self.shape, "typestr": self._typestr, "data": (self.address, False),
                "strides": None if c_order else self.strides, "version": 3}

    @property
    def __array_interface__(self):
        if self.device != "cpu":
            raise AttributeError("__array_interface__: a GPU (device='cuda') array; use __cuda_array_interface__")
        return self._interface()

    @property
    def __cuda_array_interface__(self):
        if self.device != "cuda":
            raise AttributeError("__cuda_array_interface__: a host (device='cpu') array; use __array_interface__")
        d = self._interface()
        d["stream"] = None  # tether's blocking calls are complete on return: no stream to synchronise with
        return d

    def numpy(self):
        """numpy.from_dlpack(self) (host arrays): a zero-copy, tracked view."""
        import numpy
        return numpy.from_dlpack(self)

    # ---- life ----------------------------------------------------------------------------------------------------
    def free(self):
        """Collective: every PE frees the same arrays in the same order. Refused (tether.Error) on views, on wrapped
        allocations, and while views exported through DLPack or the array interfaces are alive."""
        if self._offset != 0 or self.nbytes != self.allocation.nbytes and self.size:
            raise Error(INVALID_ARG, "free(): this is a view of an allocation; free the array it was made from")
        self.allocation.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return list(reversed(strides))


def from_address(address, shape, dtype, world=None):
    """Wraps an existing symmetric allocation (made by C code, another library or a SymmetricArray) at `address` of
    this PE as a contiguous array; checked to lie in one symmetric segment. It is never freed through this object."""
    from ._api import world as current
    w = world or current()
    ts = typestr(dtype)
    shape = [int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,))]
    itemsize = int(ts[2:])
    n = itemsize
    for d in shape:
        n *= d
    alloc = w.wrap(int(address), n)
    return SymmetricArray(alloc, 0, shape, _c_strides(shape, itemsize), ts)
