// tether._tether: the nanobind extension behind the `tether` Python package (python/tether/__init__.py).
//
// Thin by design: the C API (include/tether/*.h) does the checking and reports through tether_last_error(); this file
// turns a failed status into a Python `tether.Error(status, message)`, keeps the life of symmetric allocations honest,
// and moves the per-call work of put/get (pointer, dtype, shape, strides) into C++ so that a small put costs little
// more than the C call. Everything user-facing (module functions, SymmetricArray, slicing, stream objects) is in
// python/tether/*.py, except Team, bound here as it is (tether.Team).
//
// Life cycle (docs/python.md "Freeing"):
//  - World owns a tether_t through a shared WorldState; every Allocation and exported view keeps the state alive, so a
//    call after finalize() is a Python error, not a use of a dead handle.
//  - Allocation is one symmetric allocation. free() is collective (tether_free) and is refused while views exported
//    through DLPack/buffer protocol are alive (they would dangle). An Allocation dropped without free() is not freed
//    (a free is collective; a garbage collector runs at different times on different PEs): it is counted and released
//    by finalize(), which frees the whole heap.
//  - finalize() is refused while exported views are alive, for the same reason.
//  - Team is one team handle (tether_team_t) and keeps the state alive too; destroy() is collective (a team sync, then
//    the local tether_team_destroy); a Team dropped without destroy() is released by finalize(). The splits, sync and
//    barrier release the GIL while they wait on other PEs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tether/datatype.h>
#include <tether/tether.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

// ---- errors -------------------------------------------------------------------------------------------------------

// A failed call: raised in Python as tether.Error(status, message) (the class is handed over by set_error_type).
struct Failure {
  int status;
  std::string message;
};

nb::object& errorType() {  // the Python class tether.Error; set once at import
  static nb::object type;
  return type;
}

[[noreturn]] void fail(int status, std::string message) { throw Failure{status, std::move(message)}; }

// Raises for a failed C call with tether_last_error()'s text (or the datatype layer's, for tether_type_* calls).
void check(tether_status_t st) {
  if (st != TETHER_SUCCESS) fail(st, tether_last_error());
}
void checkType(tether_status_t st) {
  if (st != TETHER_SUCCESS) fail(st, tether_type_last_error());
}

// ---- world and allocations ----------------------------------------------------------------------------------------

struct WorldState {
  tether_t w = nullptr;
  int my_pe = -1, n_pes = 0;
  long exports = 0;     // views exported (DLPack, buffer protocol) still alive, over every allocation
  long abandoned = 0;   // allocations dropped without free(); released by finalize
  tether_t live() const {
    if (!w) fail(TETHER_ERR_INVALID_ARG, "tether is not initialised (tether.init() first) or already finalized");
    return w;
  }
};
using StatePtr = std::shared_ptr<WorldState>;

struct Allocation {
  StatePtr state;
  char* base = nullptr;
  size_t nbytes = 0;
  int kind = TETHER_SEG_HOST;  // TETHER_SEG_HOST or TETHER_SEG_DEVICE
  int device = 0;              // CUDA ordinal of a DEVICE allocation (the DLPack device id)
  bool owned = true;           // false: wraps memory that someone else allocated (never freed here)
  bool freed = false;
  long exports = 0;     // live views exported through DLPack/buffer protocol (and interfaced array objects)
  long interfaced = 0;  // of which: array objects that handed the address out through the array interfaces
  ~Allocation() {
    if (owned && !freed && state->w) ++state->abandoned;
  }
  char* data() const {
    state->live();
    if (freed) fail(TETHER_ERR_INVALID_ARG, "symmetric array used after free()");
    return base;
  }
  void free() {
    tether_t w = state->live();
    if (!owned) fail(TETHER_ERR_INVALID_ARG, "free(): this array wraps an allocation it does not own");
    if (freed) fail(TETHER_ERR_INVALID_ARG, "free(): already freed");
    if (interfaced > 0)
      fail(TETHER_ERR_INVALID_ARG, "free(): the address of this allocation was handed out through "
                                   "__array_interface__/__cuda_array_interface__ (numpy.asarray, cupy.asarray) by " +
                                       std::to_string(interfaced) + " array object(s) still alive; such views "
                                       "cannot be tracked, so free() is refused while those objects live (views by "
                                       "numpy/torch/cupy.from_dlpack are tracked and allow it once deleted)");
    if (exports > 0)
      fail(TETHER_ERR_INVALID_ARG, "free(): " + std::to_string(exports) +
                                       " view(s) of this array exported through DLPack/buffer protocol are still "
                                       "alive (numpy/torch/cupy arrays); delete them before the collective free");
    check(tether_free(w, base));
    freed = true;
  }
};
using AllocPtr = std::shared_ptr<Allocation>;

// Runs a C call that waits on other PEs (a collective, a wait) with the GIL released, so other Python threads of this
// process run meanwhile (e.g. a store served by a thread), then raises when it failed.
template <class F>
void checkWithoutGil(F&& call) {
  tether_status_t st;
  {
    nb::gil_scoped_release unlocked;
    st = call();
  }
  check(st);
}

// ---- teams --------------------------------------------------------------------------------------------------------

// One team handle of this PE (tether_team_t; docs/teams.md, docs/python.md "Teams"). Keeps the World state alive like
// Allocation, so a call after finalize() is a Python error; a Team made by a split is valid on its members only (the
// others get None). destroy() is collective here (a team sync, then the C API's local destroy): after the sync every
// member has finished the collectives this PE called on the team, which the local destroy requires. A Team dropped
// without destroy() is not destroyed (a garbage collector runs at different times on different PEs); finalize()
// releases every team.
struct Team;
using TeamPtr = std::shared_ptr<Team>;

struct Team {
  StatePtr state;
  tether_team_t handle = TETHER_TEAM_INVALID;
  const char* predefined = nullptr;  // "world" or "shared" for the predefined teams (never destroyed), else nullptr
  bool destroyed = false;

  static TeamPtr make(StatePtr state, tether_team_t h, const char* predefined = nullptr) {
    auto t = std::make_shared<Team>();
    t->state = std::move(state);
    t->handle = h;
    t->predefined = predefined;
    return t;
  }
  // The handle for `call`, or a raise: after finalize(), after destroy().
  tether_team_t live(const char* call) const {
    state->live();
    if (destroyed) fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": the team was destroyed (destroy() or the end "
                                                                    "of its with block)");
    return handle;
  }
  // A local query's answer, or a raise with tether_last_error() when it says -1 (the handle is not valid here).
  static int answer(int v) {
    if (v < 0) fail(TETHER_ERR_INVALID_ARG, tether_last_error());
    return v;
  }
  int myPe() const { return answer(tether_team_my_pe(live("Team.my_pe"))); }
  int nPes() const { return answer(tether_team_n_pes(live("Team.n_pes"))); }
  int index() const { return answer(tether_team_index(live("Team.index"))); }
  // pe checked against [0, n_pes) of this team (the C queries answer -1 without a message for a PE outside it).
  tether_team_t withPe(const char* call, int pe) const {
    tether_team_t h = live(call);
    int n = answer(tether_team_n_pes(h));
    if (pe < 0 || pe >= n)
      fail(TETHER_ERR_INVALID_PE, std::string(call) + ": team PE " + std::to_string(pe) + " is outside the team's [0, " +
                                      std::to_string(n) + ")");
    return h;
  }
  int worldPe(int pe) const { return answer(tether_team_world_pe(withPe("Team.world_pe", pe), pe)); }
  // The number in `other` of this team's PE pe; None when that PE is not a member of `other`.
  nb::object translatePe(int pe, const Team& other) const {
    tether_team_t h = withPe("Team.translate_pe", pe), o = other.live("Team.translate_pe");
    if (other.state != state)
      fail(TETHER_ERR_INVALID_ARG, "Team.translate_pe: the two teams belong to different tether instances");
    answer(tether_team_n_pes(o));
    int r = tether_team_translate_pe(h, pe, o);
    if (r < 0) return nb::none();
    return nb::int_(r);
  }
  void sync() const {
    tether_team_t h = live("Team.sync");
    checkWithoutGil([h] { return tether_team_sync(h); });
  }
  void barrier() const {
    tether_team_t h = live("Team.barrier");
    checkWithoutGil([h] { return tether_team_barrier(h); });
  }
  // Collective over this team; the new team on its members, None on the others.
  nb::object splitStrided(int start, int stride, int size) const {
    tether_team_t h = live("Team.split_strided"), out = TETHER_TEAM_INVALID;
    checkWithoutGil([&] { return tether_team_split_strided(h, start, stride, size, nullptr, &out); });
    if (out == TETHER_TEAM_INVALID) return nb::none();
    return nb::cast(make(state, out));
  }
  // Collective over this team: (row, column) of this PE in a grid xrange wide.
  std::tuple<TeamPtr, TeamPtr> split2d(int xrange) const {
    tether_team_t h = live("Team.split_2d"), x = TETHER_TEAM_INVALID, y = TETHER_TEAM_INVALID;
    checkWithoutGil([&] { return tether_team_split_2d(h, xrange, nullptr, &x, nullptr, &y); });
    return {make(state, x), make(state, y)};
  }
  void destroy() {
    tether_team_t h = live("Team.destroy");
    if (predefined)
      fail(TETHER_ERR_INVALID_ARG, std::string("Team.destroy(): the ") + predefined +
                                       " team is predefined and cannot be destroyed");
    tether_status_t st;
    {
      nb::gil_scoped_release unlocked;
      st = tether_team_sync(h);
    }
    std::string why = st != TETHER_SUCCESS ? tether_last_error() : "";
    tether_status_t gone = tether_team_destroy(h);  // also after a failed sync: this PE's handle goes
    if (gone == TETHER_SUCCESS) destroyed = true;
    if (st != TETHER_SUCCESS)
      fail(st, "Team.destroy(): the team sync before the destroy failed (" + why + "); the team is " +
                   (destroyed ? "released on this PE" : "still live on this PE"));
    check(gone);
  }
  std::string repr() const {
    if (destroyed) return "<tether.Team destroyed>";
    if (!state->w) return "<tether.Team of a finalized instance>";
    return "<tether.Team " + std::string(predefined ? predefined : "split") + ": team PE " +
           std::to_string(tether_team_my_pe(handle)) + " of " + std::to_string(tether_team_n_pes(handle)) +
           ", index " + std::to_string(tether_team_index(handle)) + ">";
  }
};

// The CUDA device ordinal of GPU memory at p, asked of the driver (cuPointerGetAttribute, DEVICE_ORDINAL; found
// through dlopen: the extension links no CUDA), or `fallback` where there is no driver or it does not know p.
int deviceOrdinal(const void* p, int fallback) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fallback;
  using GetAttr = int (*)(void* data, int attribute, unsigned long long ptr);
  auto get = reinterpret_cast<GetAttr>(dlsym(lib, "cuPointerGetAttribute"));
  constexpr int kDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
  int ordinal = -1;
  bool ok = get && get(&ordinal, kDeviceOrdinal, reinterpret_cast<uintptr_t>(p)) == 0 && ordinal >= 0;
  dlclose(lib);
  return ok ? ordinal : fallback;
}

struct World {
  StatePtr state = std::make_shared<WorldState>();

  // The forms of tether.init() (python/tether/_api.py): from the environment (all defaults); from an MPI
  // communicator (mpi_comm: the address of its MPI_Comm handle, mpi4py's MPI._addressof(comm); tether_init_mpi); or
  // from an explicit position and rendezvous (rank, size, "host:port", secret and, on rank 0, a listening socket that
  // tether takes over and closes: the torch.distributed store path). The GIL is released during the collective call:
  // a store served by a Python thread of this process keeps working while rank 0 waits for the others.
  World(const std::vector<std::string>& config, int rank, int size, const std::string& bootstrap_addr,
        const std::string& job_secret, int listen_fd, uintptr_t mpi_comm) {
    std::vector<const char*> cfg;
    for (const std::string& c : config) cfg.push_back(c.c_str());
    cfg.push_back(nullptr);
    tether_init_attr_t attr;
    tether_init_attr_default(&attr);
    if (!config.empty()) attr.config = cfg.data();
    attr.rank = rank;
    attr.size = size;
    if (!bootstrap_addr.empty()) attr.bootstrap_addr = bootstrap_addr.c_str();
    if (!job_secret.empty()) attr.job_secret = job_secret.c_str();
    attr.bootstrap_listen_fd = listen_fd;
    tether_t w = nullptr;
    checkWithoutGil([&] {
      return mpi_comm ? tether_init_mpi(reinterpret_cast<const void*>(mpi_comm), &attr, &w) : tether_init_attr(&attr, &w);
    });
    state->w = w;
    state->my_pe = tether_my_pe(w);
    state->n_pes = tether_n_pes(w);
  }
  void finalize() {
    tether_t w = state->live();
    if (state->exports > 0)
      fail(TETHER_ERR_INVALID_ARG, "finalize(): " + std::to_string(state->exports) +
                                       " view(s) of symmetric arrays exported through DLPack/buffer protocol are "
                                       "still alive; delete them first (finalize releases the symmetric heap)");
    state->w = nullptr;  // dead for every later call, also when the collective finalize fails
    check(tether_finalize(w));
  }
  AllocPtr alloc(size_t nbytes, int kind, size_t alignment, bool zero) {
    tether_t w = state->live();
    if (kind != TETHER_SEG_HOST && kind != TETHER_SEG_DEVICE) fail(TETHER_ERR_INVALID_ARG, "alloc: bad segment kind");
    void* p = nullptr;
    check(tether_malloc_kind(w, static_cast<tether_seg_kind_t>(kind), alignment, nbytes, &p));
    auto a = std::make_shared<Allocation>();
    a->state = state;
    a->base = static_cast<char*>(p);
    a->nbytes = nbytes;
    a->kind = kind;
    if (kind == TETHER_SEG_DEVICE) a->device = deviceOrdinal(p, defaultDevice());
    if (zero && nbytes > 0) {
      if (kind == TETHER_SEG_HOST) {
        std::memset(p, 0, nbytes);
      } else {  // GPU memory: a put from a zeroed host buffer to this PE (copy engine; any build that made it)
        std::vector<char> zeros(nbytes, 0);
        check(tether_put(w, p, zeros.data(), nbytes, state->my_pe));
      }
      check(tether_barrier_all(w));  // nobody writes into a peer's copy before that peer zeroed it
    }
    return a;
  }
  TeamPtr team(const char* which) const {
    tether_t w = state->live();
    tether_team_t h = std::strcmp(which, "world") == 0 ? tether_team_world(w) : tether_team_shared(w);
    if (h == TETHER_TEAM_INVALID) fail(TETHER_ERR_INVALID_ARG, tether_last_error());
    return Team::make(state, h, which);
  }
  // tether's default GPU for this PE (TETHER_GPU=auto): node-local PE modulo the visible GPUs.
  int defaultDevice() const {
    tether_build_info_t b;
    if (tether_get_build_info(&b) != TETHER_SUCCESS || b.gpus_visible <= 0) return 0;
    return tether_local_pe(state->w) % b.gpus_visible;
  }
  // Wraps [addr, addr + nbytes) of an existing symmetric allocation (not freed by us). Both ends must be symmetric.
  AllocPtr wrap(uintptr_t addr, size_t nbytes) {
    tether_t w = state->live();
    const char* p = reinterpret_cast<const char*>(addr);
    tether_seg_kind_t k = tether_segment_kind(w, p);
    if (k == TETHER_SEG_DEFAULT || (nbytes > 0 && tether_segment_kind(w, p + nbytes - 1) != k))
      fail(TETHER_ERR_NOT_SYMMETRIC, "from_address: [" + std::to_string(addr) + ", +" + std::to_string(nbytes) +
                                         ") is not inside one symmetric segment of PE " +
                                         std::to_string(state->my_pe));
    auto a = std::make_shared<Allocation>();
    a->state = state;
    a->base = const_cast<char*>(p);
    a->nbytes = nbytes;
    a->kind = k;
    if (k == TETHER_SEG_DEVICE) a->device = deviceOrdinal(p, defaultDevice());
    a->owned = false;
    return a;
  }
};

// ---- arrays -------------------------------------------------------------------------------------------------------

// A typed, strided view of (part of) an Allocation. SymmetricArray (Python) derives from it and adds slicing etc.
// C order without gaps: every dimension of extent > 1 has the byte stride of the dimensions inside it.
bool isContiguous(size_t itemsize, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t expect = static_cast<int64_t>(itemsize);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

struct ArrayBase {
  AllocPtr alloc;
  size_t offset = 0;            // bytes from alloc->base to element [0, ..., 0]
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // bytes
  nb::dlpack::dtype dtype{};
  size_t itemsize = 0;
  // Set once __array_interface__/__cuda_array_interface__ handed the address out: the consumer keeps this object, not
  // an owner capsule, so the object itself counts as one exported view until it dies.
  bool interfaced = false;

  ArrayBase() = default;
  ArrayBase(const ArrayBase&) = delete;
  ArrayBase& operator=(const ArrayBase&) = delete;
  ~ArrayBase() {
    if (interfaced) {
      --alloc->interfaced;
      --alloc->exports;
      --alloc->state->exports;
    }
  }
  void markInterfaced() {
    data();
    if (interfaced) return;
    interfaced = true;
    ++alloc->interfaced;
    ++alloc->exports;
    ++alloc->state->exports;
  }

  char* data() const { return alloc->data() + offset; }
  size_t count() const {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    return n;
  }
  bool contiguous() const { return isContiguous(itemsize, shape, strides); }
};

void initArray(ArrayBase& a, AllocPtr alloc, size_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides,
               uint8_t code, uint8_t bits) {
  if (shape.size() != strides.size()) fail(TETHER_ERR_INVALID_ARG, "shape and strides differ in length");
  if (bits == 0 || bits % 8) fail(TETHER_ERR_INVALID_ARG, "dtype of " + std::to_string(bits) + " bits");
  // Every byte the view can reach must lie inside the allocation (a view is never a way out of it).
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail(TETHER_ERR_INVALID_ARG, "negative dimension");
    if (shape[i] == 0) { lo = hi = 0; break; }
    int64_t span = (shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  int64_t first = static_cast<int64_t>(offset) + lo, last = static_cast<int64_t>(offset) + hi + bits / 8;
  if (first < 0 || last > static_cast<int64_t>(alloc->nbytes))
    fail(TETHER_ERR_INVALID_ARG, "view reaches bytes [" + std::to_string(first) + ", " + std::to_string(last) +
                                     ") outside its allocation of " + std::to_string(alloc->nbytes) + " bytes");
  a.alloc = std::move(alloc);
  a.offset = offset;
  a.shape = std::move(shape);
  a.strides = std::move(strides);
  a.dtype = nb::dlpack::dtype{code, bits, 1};
  a.itemsize = bits / 8;
}

// Basic indexing (integers, slices, one Ellipsis) of `a`: makes `v` the view it names. IndexError for integers out
// of range and for too many indices, TypeError for other index kinds.
void indexInto(ArrayBase& v, const ArrayBase& a, nb::handle key) {
  nb::tuple k = PyTuple_Check(key.ptr()) ? nb::borrow<nb::tuple>(key) : nb::make_tuple(key);
  size_t nk = k.size(), ell = nk;
  for (size_t i = 0; i < nk; ++i) {
    if (k[i].is(nb::ellipsis())) {
      if (ell != nk) throw nb::index_error("an index can only have a single ellipsis");
      ell = i;
    }
  }
  size_t given = nk - (ell != nk ? 1 : 0), ndim = a.shape.size();
  if (given > ndim)
    throw nb::index_error(("too many indices: " + std::to_string(given) + " for a " + std::to_string(ndim) +
                           "-d array").c_str());
  int64_t offset = static_cast<int64_t>(a.offset);
  std::vector<int64_t> shape, strides;
  size_t dim = 0;
  auto keep = [&](size_t count) {  // dimensions taken whole
    for (size_t j = 0; j < count; ++j, ++dim) {
      shape.push_back(a.shape[dim]);
      strides.push_back(a.strides[dim]);
    }
  };
  for (size_t i = 0; i < nk; ++i, ++dim) {
    PyObject* o = k[i].ptr();
    if (i == ell) {
      keep(ndim - given);
      --dim;
      continue;
    }
    int64_t n = a.shape[dim], st = a.strides[dim];
    if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
      Py_ssize_t count = PySlice_AdjustIndices(static_cast<Py_ssize_t>(n), &start, &stop, step);
      if (count > 0) offset += start * st;
      shape.push_back(count);
      strides.push_back(st * step);
    } else {
      Py_ssize_t i64 = PyNumber_AsSsize_t(o, PyExc_IndexError);
      if (i64 == -1 && PyErr_Occurred()) throw nb::python_error();
      if (i64 < -n || i64 >= n)
        throw nb::index_error(("index " + std::to_string(i64) + " is out of bounds for an axis of size " +
                               std::to_string(n)).c_str());
      offset += (i64 < 0 ? i64 + n : i64) * st;
    }
  }
  keep(ndim - dim);
  initArray(v, a.alloc, static_cast<size_t>(offset), std::move(shape), std::move(strides), a.dtype.code,
            a.dtype.bits);
}

// Exports a view (DLPack / buffer protocol through nanobind's nb_ndarray). The owner capsule keeps the allocation and
// counts the view as alive until the consumer (numpy, torch, cupy) drops it.
nb::ndarray<nb::array_api> exportView(const ArrayBase& a) {
  char* p = a.data();
  auto* keep = new AllocPtr(a.alloc);
  ++a.alloc->exports;
  ++a.alloc->state->exports;
  nb::capsule owner(keep, [](void* k) noexcept {
    auto* ap = static_cast<AllocPtr*>(k);
    --(*ap)->exports;
    --(*ap)->state->exports;
    delete ap;
  });
  std::vector<size_t> shape(a.shape.begin(), a.shape.end());
  std::vector<int64_t> strides;  // nanobind counts strides in elements
  for (int64_t s : a.strides) strides.push_back(s / static_cast<int64_t>(a.itemsize));
  int dev = a.alloc->kind == TETHER_SEG_DEVICE ? nb::device::cuda::value : nb::device::cpu::value;
  int dev_id = a.alloc->kind == TETHER_SEG_DEVICE ? a.alloc->device : 0;
  return nb::ndarray<nb::array_api>(p, shape.size(), shape.data(), owner, strides.data(), a.dtype, dev, dev_id);
}

// ---- layouts for put/get ----------------------------------------------------------------------------------------

// One side of a transfer: base pointer, element size, shape and byte strides.
struct Side {
  char* ptr;
  size_t itemsize;
  std::vector<int64_t> shape, strides;
  bool contiguous() const { return isContiguous(itemsize, shape, strides); }
};

Side sideOf(const ArrayBase& a) { return Side{a.data(), a.itemsize, a.shape, a.strides}; }

template <class... Args>
Side sideOf(const nb::ndarray<Args...>& a) {
  Side s{static_cast<char*>(const_cast<void*>(a.data())), a.itemsize(), {}, {}};
  for (size_t i = 0; i < a.ndim(); ++i) {
    s.shape.push_back(static_cast<int64_t>(a.shape(i)));
    s.strides.push_back(a.stride(i) * static_cast<int64_t>(a.itemsize()));
  }
  return s;
}

// The local side of a put/get: through the buffer protocol when the object has it (numpy, bytes, memoryview,
// array.array: much cheaper than a DLPack import, which matters for small puts), else through nanobind's ndarray
// caster (DLPack: torch, cupy, GPU memory). Holds the buffer until the transfer is done.
class Local {
 public:
  Local(nb::handle obj, bool writable) {
    if (PyObject_CheckBuffer(obj.ptr()) &&
        PyObject_GetBuffer(obj.ptr(), &view_, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) == 0) {
      held_ = true;
      if (formatDtype(view_.format, static_cast<size_t>(view_.itemsize), &dtype_)) {
        side_ = Side{static_cast<char*>(view_.buf), static_cast<size_t>(view_.itemsize), {}, {}};
        for (int i = 0; i < view_.ndim; ++i) {
          side_.shape.push_back(view_.shape[i]);
          side_.strides.push_back(view_.strides[i]);
        }
        return;
      }
      release();  // a format we do not map (big-endian, structs): let DLPack decide
    }
    PyErr_Clear();
    if (writable) {
      nb::ndarray<> a;
      if (!nb::try_cast(nb::borrow(obj), a))
        fail(TETHER_ERR_INVALID_ARG, "local buffer of type " + std::string(nb::type_name(obj.type()).c_str()) +
                                         " is not a writable array (DLPack or buffer protocol)");
      side_ = sideOf(a);
      dtype_ = a.dtype();
      dl_ = nb::ndarray<nb::ro>(a);
    } else {
      nb::ndarray<nb::ro> a;
      if (!nb::try_cast(nb::borrow(obj), a))
        fail(TETHER_ERR_INVALID_ARG, "local buffer of type " + std::string(nb::type_name(obj.type()).c_str()) +
                                         " is not an array (DLPack or buffer protocol)");
      side_ = sideOf(a);
      dtype_ = a.dtype();
      dl_ = a;
    }
  }
  ~Local() { release(); }
  Local(const Local&) = delete;
  Local& operator=(const Local&) = delete;
  const Side& side() const { return side_; }
  const nb::dlpack::dtype& dtype() const { return dtype_; }

 private:
  void release() {
    if (held_) PyBuffer_Release(&view_);
    held_ = false;
  }
  // struct-module format of one element ("<d", "q", "Zf", ...) -> DLPack dtype; false for what has none.
  static bool formatDtype(const char* f, size_t itemsize, nb::dlpack::dtype* out) {
    using C = nb::dlpack::dtype_code;
    if (!f) f = "B";
    if (*f == '<' || *f == '@' || *f == '=') ++f;
    C code;
    if (f[0] == 'Z' && (f[1] == 'f' || f[1] == 'd') && f[2] == 0) {
      code = C::Complex;
    } else if (f[0] != 0 && f[1] == 0 && std::strchr("bhilqn", f[0])) {
      code = C::Int;
    } else if (f[0] != 0 && f[1] == 0 && std::strchr("BHILQN", f[0])) {
      code = C::UInt;
    } else if (f[0] != 0 && f[1] == 0 && std::strchr("efd", f[0])) {
      code = C::Float;
    } else if (f[0] == '?' && f[1] == 0) {
      code = C::Bool;
    } else {
      return false;
    }
    *out = nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(itemsize * 8), 1};
    return true;
  }
  Py_buffer view_{};
  bool held_ = false;
  Side side_{};
  nb::dlpack::dtype dtype_{};
  nb::ndarray<nb::ro> dl_;  // keeps a DLPack import alive
};

size_t elems(const Side& s) {
  size_t n = 1;
  for (int64_t d : s.shape) n *= static_cast<size_t>(d);
  return n;
}

// A committed tether datatype describing one instance of a side's layout (C order of its elements), freed on scope
// exit. Dimensions of extent 1 are dropped and adjacent dimensions that are contiguous with each other are merged.
class Layout {
 public:
  explicit Layout(const Side& s) {
    std::vector<std::pair<int64_t, int64_t>> dims;  // (count, byte stride), outermost first, merged
    for (size_t i = 0; i < s.shape.size(); ++i) {
      if (s.shape[i] == 1) continue;
      if (!dims.empty() && dims.back().second == s.shape[i] * s.strides[i]) {
        dims.back() = {dims.back().first * s.shape[i], s.strides[i]};
      } else {
        dims.push_back({s.shape[i], s.strides[i]});
      }
    }
    tether_type_t byte;
    checkType(tether_type_basic(TETHER_BASIC_BYTE, &byte));
    checkType(tether_type_contiguous(static_cast<int64_t>(s.itemsize), byte, &type_));
    tether_type_free(&byte);
    for (size_t i = dims.size(); i-- > 0;) {
      if (i + 1 == dims.size() && dims[i].second == static_cast<int64_t>(s.itemsize)) {  // contiguous innermost run
        replace([&](tether_type_t t, tether_type_t* n) { return tether_type_contiguous(dims[i].first, t, n); });
      } else {
        replace([&](tether_type_t t, tether_type_t* n) {
          return tether_type_hvector(dims[i].first, 1, dims[i].second, t, n);
        });
      }
    }
    checkType(tether_type_commit(type_));
  }
  ~Layout() { tether_type_free(&type_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  tether_type_t get() const { return type_; }

 private:
  template <class F>
  void replace(F make) {
    tether_type_t next = nullptr;
    tether_status_t st = make(type_, &next);
    tether_type_free(&type_);
    checkType(st);
    type_ = next;
  }
  tether_type_t type_ = nullptr;
};

// Same dtype size and element count on both sides (the C order of elements maps one to the other).
void matchSides(const char* call, const Side& sym, const Side& local, const nb::dlpack::dtype& sym_dt,
                const nb::dlpack::dtype& local_dt) {
  if (sym_dt != local_dt)
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": dtype differs (symmetric array: code " +
                                     std::to_string(sym_dt.code) + "/" + std::to_string(sym_dt.bits) +
                                     " bits, local buffer: code " + std::to_string(local_dt.code) + "/" +
                                     std::to_string(local_dt.bits) + " bits)");
  if (elems(sym) != elems(local))
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": " + std::to_string(elems(local)) + " elements in the local "
                                     "buffer, " + std::to_string(elems(sym)) + " in the symmetric array");
}

enum class Dir { Put, Get };

// put: local -> sym on pe; get: sym on pe -> local. Contiguous pairs take tether_put/get(_nbi), others one typed call.
void transfer(tether_t w, Dir dir, const Side& sym, const Side& local, int pe, bool nbi, uintptr_t stream,
              bool on_stream) {
  size_t n = elems(sym);
  if (n == 0) return;
  size_t nbytes = n * sym.itemsize;
  void* stream_ptr = reinterpret_cast<void*>(stream);
  if (sym.contiguous() && local.contiguous()) {
    if (dir == Dir::Put) {
      if (on_stream) check(tether_putmem_on_stream(w, sym.ptr, local.ptr, nbytes, pe, stream_ptr));
      else check((nbi ? tether_put_nbi : tether_put)(w, sym.ptr, local.ptr, nbytes, pe));
    } else {
      if (on_stream) check(tether_getmem_on_stream(w, local.ptr, sym.ptr, nbytes, pe, stream_ptr));
      else check((nbi ? tether_get_nbi : tether_get)(w, local.ptr, sym.ptr, nbytes, pe));
    }
    return;
  }
  Layout st(sym), lt(local);
  if (dir == Dir::Put) {
    if (on_stream) check(tether_put_typed_on_stream(w, sym.ptr, st.get(), 1, local.ptr, lt.get(), 1, pe, stream_ptr));
    else check((nbi ? tether_put_typed_nbi : tether_put_typed)(w, sym.ptr, st.get(), 1, local.ptr, lt.get(), 1, pe));
  } else {
    if (on_stream) check(tether_get_typed_on_stream(w, local.ptr, lt.get(), 1, sym.ptr, st.get(), 1, pe, stream_ptr));
    else check((nbi ? tether_get_typed_nbi : tether_get_typed)(w, local.ptr, lt.get(), 1, sym.ptr, st.get(), 1, pe));
  }
}

// ---- scalars: atomics, waits, signals ---------------------------------------------------------------------------

// The tether_dtype_t of a team collective's elements: every integer width of 8 to 64 bits, float16, bfloat16, float32,
// float64 (docs/python.md "Collectives"); TETHER_DTYPE_COUNT for anything else.
tether_dtype_t collDtypeOf(const nb::dlpack::dtype& d) {
  using C = nb::dlpack::dtype_code;
  const uint8_t c = d.code;
  if (d.lanes != 1) return TETHER_DTYPE_COUNT;
  if (c == static_cast<uint8_t>(C::Int) || c == static_cast<uint8_t>(C::UInt)) {
    const bool u = c == static_cast<uint8_t>(C::UInt);
    switch (d.bits) {
      case 8: return u ? TETHER_UINT8 : TETHER_INT8;
      case 16: return u ? TETHER_USHORT : TETHER_SHORT;
      case 32: return u ? TETHER_UINT32 : TETHER_INT32;
      case 64: return u ? TETHER_UINT64 : TETHER_INT64;
      default: return TETHER_DTYPE_COUNT;
    }
  }
  if (c == static_cast<uint8_t>(C::Float)) {
    if (d.bits == 16) return TETHER_HALF;
    if (d.bits == 32) return TETHER_FLOAT;
    if (d.bits == 64) return TETHER_DOUBLE;
  }
  if (c == static_cast<uint8_t>(C::Bfloat) && d.bits == 16) return TETHER_BFLOAT16;
  return TETHER_DTYPE_COUNT;
}

// The tether_dtype_t of an array's element type (atomics and waits): the collectives' types but int8, uint8,
// float16 and bfloat16.
tether_dtype_t dtypeOf(const nb::dlpack::dtype& d) {
  const tether_dtype_t t = collDtypeOf(d);
  if (t == TETHER_DTYPE_COUNT || t == TETHER_INT8 || t == TETHER_UINT8 || t == TETHER_HALF || t == TETHER_BFLOAT16)
    fail(TETHER_ERR_INVALID_ARG, "dtype code " + std::to_string(d.code) + "/" + std::to_string(d.bits) +
                                     " bits has no atomic or wait form (int16/32/64, uint16/32/64, float32/64)");
  return t;
}

// A scalar of the element type, from a Python int or float (range-checked by the cast).
struct Scalar {
  alignas(8) unsigned char bytes[8] = {};
};

Scalar toScalar(tether_dtype_t t, nb::handle v) {
  Scalar s;
  auto put = [&](auto x) { std::memcpy(s.bytes, &x, sizeof x); };
  switch (t) {
    case TETHER_SHORT: put(nb::cast<int16_t>(v)); break;
    case TETHER_USHORT: put(nb::cast<uint16_t>(v)); break;
    case TETHER_INT32: put(nb::cast<int32_t>(v)); break;
    case TETHER_UINT32: put(nb::cast<uint32_t>(v)); break;
    case TETHER_INT64: put(nb::cast<int64_t>(v)); break;
    case TETHER_UINT64: put(nb::cast<uint64_t>(v)); break;
    case TETHER_FLOAT: put(nb::cast<float>(v)); break;
    default: put(nb::cast<double>(v)); break;
  }
  return s;
}

nb::object fromScalar(tether_dtype_t t, const Scalar& s) {
  auto get = [&](auto x) { std::memcpy(&x, s.bytes, sizeof x); return nb::cast(x); };
  switch (t) {
    case TETHER_SHORT: return get(int16_t{});
    case TETHER_USHORT: return get(uint16_t{});
    case TETHER_INT32: return get(int32_t{});
    case TETHER_UINT32: return get(uint32_t{});
    case TETHER_INT64: return get(int64_t{});
    case TETHER_UINT64: return get(uint64_t{});
    case TETHER_FLOAT: return get(float{});
    default: return get(double{});
  }
}

// The one element an atomic, wait or signal works on: a 0-d array or an array of exactly one element.
char* scalarPtr(const char* call, const ArrayBase& a) {
  if (a.count() != 1)
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": needs one element (index the array: a[i]), got " +
                                     std::to_string(a.count()));
  return a.data();
}

nb::object atomic(const ArrayBase& a, int op, nb::handle value, nb::handle cond, int pe) {
  tether_t w = a.alloc->state->live();
  tether_dtype_t t = dtypeOf(a.dtype);
  char* p = scalarPtr("atomic", a);
  Scalar v = value.is_none() ? Scalar{} : toScalar(t, value);
  Scalar c = cond.is_none() ? Scalar{} : toScalar(t, cond);
  Scalar old;
  check(tether_atomic(w, static_cast<tether_amo_t>(op), t, p, v.bytes, c.bytes, old.bytes, pe));
  return fromScalar(t, old);
}

bool waitOrTest(const ArrayBase& a, int cmp, nb::handle value, bool wait) {
  tether_t w = a.alloc->state->live();
  tether_dtype_t t = dtypeOf(a.dtype);
  char* p = scalarPtr(wait ? "wait_until" : "test", a);
  Scalar v = toScalar(t, value);
  if (wait) {  // other Python threads run while this one waits
    checkWithoutGil([&] { return tether_wait_until(w, p, t, static_cast<tether_cmp_t>(cmp), v.bytes); });
    return true;
  }
  int r = 0;
  check(tether_test(w, p, t, static_cast<tether_cmp_t>(cmp), v.bytes, &r));
  return r != 0;
}

uint64_t* signalWord(const char* call, const ArrayBase& s) {
  if (s.dtype != nb::dtype<uint64_t>())
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": a signal word is a uint64 element of a symmetric array");
  return reinterpret_cast<uint64_t*>(scalarPtr(call, s));
}

// ---- team collectives ----------------------------------------------------------------------------------------

// The collectives, in the order of python/tether/_api.py's kinds.
enum class Coll { Broadcast = 0, Reduce, Allreduce, Allgather, ReduceScatter, Alltoall };

// The blocking host form of collective k (its caller releases the GIL).
tether_status_t hostColl(Coll k, tether_team_t t, void* d, const void* x, size_t count, tether_dtype_t type,
                         tether_red_op_t o, int root) {
  switch (k) {
    case Coll::Broadcast: return tether_team_broadcast(t, d, x, count, type, root);
    case Coll::Reduce: return tether_team_reduce(t, d, x, count, type, o, root);
    case Coll::Allreduce: return tether_team_allreduce(t, d, x, count, type, o);
    case Coll::Allgather: return tether_team_allgather(t, d, x, count, type);
    case Coll::ReduceScatter: return tether_team_reduce_scatter(t, d, x, count, type, o);
    default: return tether_team_alltoall(t, d, x, count, type);
  }
}

// One team collective on symmetric arrays (contiguous, same dtype, of the team's instance). The count comes from the
// arrays: broadcast/reduce/allreduce dest.size (src the same size), allgather src.size (dest n_pes times it),
// reduce_scatter dest.size (src n_pes times it), alltoall src.size / n_pes (dest the same size). The host forms
// release the GIL while they wait on the other members; the stream forms return once enqueued.
// A problem only these arrays show (shapes, dtypes, layout) still takes part in the host form's agreement, as a call
// with an invalid element type, so that every member fails (the others with "team PE k passed invalid arguments")
// instead of waiting for this one until TETHER_TIMEOUT; this PE then raises the problem itself. The stream forms are
// not agreed (docs/collectives.md): their errors are this PE's alone, as in the C API.
void teamColl(const Team& team, int kind, const ArrayBase& dest, const ArrayBase& src, int op, int root,
              uintptr_t stream, bool onStream) {
  static const char* const kNames[] = {"broadcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"};
  if (kind < 0 || kind > static_cast<int>(Coll::Alltoall)) fail(TETHER_ERR_INVALID_ARG, "collective: bad kind");
  const std::string call = kNames[kind];
  const tether_team_t t = team.live(call.c_str());
  const Coll k = static_cast<Coll>(kind);
  const size_t n = static_cast<size_t>(Team::answer(tether_team_n_pes(t)));
  const size_t nd = dest.count(), ns = src.count();
  const tether_dtype_t type = collDtypeOf(dest.dtype);
  std::string bad;  // this PE's own problem with the arrays, if any
  size_t count = nd;
  auto sizes = [&](bool ok, const char* what) {
    if (!ok && bad.empty())
      bad = std::string(what) + " (dest has " + std::to_string(nd) + " elements, src " + std::to_string(ns) +
            ", the team " + std::to_string(n) + " PEs)";
  };
  if (dest.alloc->state != team.state || src.alloc->state != team.state) {
    bad = "the arrays and the team belong to different tether instances";
  } else if (dest.dtype != src.dtype) {
    bad = "dest and src have different dtypes";
  } else if (type == TETHER_DTYPE_COUNT) {
    bad = "dtype code " + std::to_string(dest.dtype.code) + "/" + std::to_string(dest.dtype.bits) +
          " bits is not a collective element type (int8-64, uint8-64, float16, bfloat16, float32, float64)";
  } else if (!dest.contiguous() || !src.contiguous()) {
    bad = "dest and src must be contiguous (a collective moves whole arrays; copy a strided view into a contiguous "
          "one first)";
  } else if (k == Coll::Allgather) {
    count = ns;
    sizes(nd == n * ns, "dest must hold n_pes times src's elements");
  } else if (k == Coll::ReduceScatter) {
    sizes(ns == n * nd, "src must hold n_pes times dest's elements");
  } else if (k == Coll::Alltoall) {
    count = ns / n;
    sizes(nd == ns && ns % n == 0, "dest and src must have the same size, a multiple of n_pes");
  } else {
    sizes(nd == ns, "dest and src must have the same size");
  }
  void* d = dest.data();
  const void* x = src.data();
  const auto o = static_cast<tether_red_op_t>(op);
  void* s = reinterpret_cast<void*>(stream);
  if (!bad.empty()) {
    if (!onStream) {  // the agreement: every member fails (see above); this PE's status is the invalid type's
      nb::gil_scoped_release unlocked;
      (void)hostColl(k, t, d, x, 0, TETHER_DTYPE_COUNT, o, root);
    }
    fail(TETHER_ERR_INVALID_ARG, call + ": " + bad);
  }
  if (onStream) {
    switch (k) {
      case Coll::Broadcast: check(tether_team_broadcast_on_stream(t, d, x, count, type, root, s)); break;
      case Coll::Reduce: check(tether_team_reduce_on_stream(t, d, x, count, type, o, root, s)); break;
      case Coll::Allreduce: check(tether_team_allreduce_on_stream(t, d, x, count, type, o, s)); break;
      case Coll::Allgather: check(tether_team_allgather_on_stream(t, d, x, count, type, s)); break;
      case Coll::ReduceScatter: check(tether_team_reduce_scatter_on_stream(t, d, x, count, type, o, s)); break;
      case Coll::Alltoall: check(tether_team_alltoall_on_stream(t, d, x, count, type, s)); break;
    }
    return;
  }
  checkWithoutGil([&] { return hostColl(k, t, d, x, count, type, o, root); });
}

}  // namespace

NB_MODULE(_tether, m) {
  m.doc() = "tether's C API for the tether package (use `import tether`)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Failure& f) {
      nb::object type = errorType();
      if (!type.is_valid()) type = nb::borrow(PyExc_RuntimeError);
      nb::object args = nb::make_tuple(f.status, f.message);
      PyErr_SetObject(type.ptr(), args.ptr());
    }
  });
  m.def("_set_error_type", [](nb::object t) { errorType() = std::move(t); });

  m.def("version", []() {
    int ma = 0, mi = 0, pa = 0;
    tether_version(&ma, &mi, &pa);
    return std::make_tuple(ma, mi, pa);
  }, "(major, minor, patch) of the libtether actually loaded");
  m.def("build_info", []() {
    tether_build_info_t b;
    check(tether_get_build_info(&b));
    nb::dict d;
    d["cuda"] = b.cuda != 0;
    d["ucx"] = b.ucx != 0;
    d["sanitizers"] = b.sanitizers != 0;
    d["ucx_version"] = std::string(b.ucx_version);
    d["gpus_visible"] = b.gpus_visible;
    return d;
  });
  m.def("status_string", [](int s) { return std::string(tether_status_string(static_cast<tether_status_t>(s))); });

  nb::class_<Allocation>(m, "Allocation")
      .def("free", &Allocation::free)
      .def_prop_ro("address", [](const Allocation& a) { return reinterpret_cast<uintptr_t>(a.base); })
      .def_prop_ro("nbytes", [](const Allocation& a) { return a.nbytes; })
      .def_prop_ro("kind", [](const Allocation& a) { return a.kind; })
      .def_prop_ro("device", [](const Allocation& a) { return a.device; })
      .def_prop_ro("owned", [](const Allocation& a) { return a.owned; })
      .def_prop_ro("freed", [](const Allocation& a) { return a.freed; })
      .def_prop_ro("exports", [](const Allocation& a) { return a.exports; });

  nb::class_<World>(m, "World")
      .def(nb::init<const std::vector<std::string>&, int, int, const std::string&, const std::string&, int, uintptr_t>(),
           nb::arg("config") = std::vector<std::string>{}, nb::arg("rank") = -1, nb::arg("size") = -1,
           nb::arg("bootstrap_addr") = std::string(), nb::arg("job_secret") = std::string(),
           nb::arg("listen_fd") = -1, nb::arg("mpi_comm") = uintptr_t{0})
      .def("finalize", &World::finalize)
      .def_prop_ro("alive", [](const World& w) { return w.state->w != nullptr; })
      .def_prop_ro("my_pe", [](const World& w) { w.state->live(); return w.state->my_pe; })
      .def_prop_ro("n_pes", [](const World& w) { w.state->live(); return w.state->n_pes; })
      .def_prop_ro("local_pe", [](const World& w) { return tether_local_pe(w.state->live()); })
      .def_prop_ro("local_size", [](const World& w) { return tether_local_size(w.state->live()); })
      .def_prop_ro("exports", [](const World& w) { return w.state->exports; })
      .def_prop_ro("abandoned", [](const World& w) { return w.state->abandoned; })
      .def("barrier", [](const World& w) { check(tether_barrier_all(w.state->live())); })
      .def("sync", [](const World& w) { check(tether_sync_all(w.state->live())); })
      .def("quiet", [](const World& w) { check(tether_quiet(w.state->live())); })
      .def("fence", [](const World& w) { check(tether_fence(w.state->live())); })
      .def("quiet_on_stream", [](const World& w, uintptr_t s) {
        check(tether_quiet_on_stream(w.state->live(), reinterpret_cast<void*>(s)));
      })
      .def("barrier_on_stream", [](const World& w, uintptr_t s) {
        check(tether_barrier_all_on_stream(w.state->live(), reinterpret_cast<void*>(s)));
      })
      .def("alloc", &World::alloc, nb::arg("nbytes"), nb::arg("kind"), nb::arg("alignment") = 0,
           nb::arg("zero") = false)
      .def("wrap", &World::wrap)
      .def("team_world", [](const World& w) { return w.team("world"); })
      .def("team_shared", [](const World& w) { return w.team("shared"); })
      .def("segment_kind", [](const World& w, uintptr_t a) {
        return static_cast<int>(tether_segment_kind(w.state->live(), reinterpret_cast<const void*>(a)));
      })
      .def("ptr", [](const World& w, uintptr_t a, int pe) {
        return reinterpret_cast<uintptr_t>(tether_ptr(w.state->live(), reinterpret_cast<const void*>(a), pe));
      });

  nb::class_<Team>(m, "Team", "A team of PEs (tether.team_world(), team_shared(), Team.split_*; docs/python.md)")
      .def("my_pe", &Team::myPe, "this PE's number in the team")
      .def("n_pes", &Team::nPes)
      .def("index", &Team::index, "the team's index in [0, 64), the same on every member")
      .def("world_pe", &Team::worldPe, nb::arg("pe"), "the world PE number of team PE pe")
      .def("translate_pe", &Team::translatePe, nb::arg("pe"), nb::arg("other_team"),
           "the number in other_team of team PE pe; None when that PE is not a member of other_team")
      .def("sync", &Team::sync, "collective over the team: stores made before are visible to every member after")
      .def("barrier", &Team::barrier, "collective: completes this PE's operations (quiet), then syncs the team")
      .def("split_strided", &Team::splitStrided, nb::arg("start"), nb::arg("stride"), nb::arg("size"),
           "collective over this team: the team of its PEs start + i*stride, i < size; None on PEs left out")
      .def("split_2d", &Team::split2d, nb::arg("xrange"),
           "collective over this team: (row, column) of this PE in a grid xrange wide")
      .def("destroy", &Team::destroy, "collective over the team (a sync, then this PE's handle is released)")
      .def_prop_ro("destroyed", [](const Team& t) { return t.destroyed; })
      .def_prop_ro("predefined", [](const Team& t) { return t.predefined != nullptr; })
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](Team& t, nb::args) {
        if (!t.destroyed) t.destroy();
        return false;
      })
      .def("__repr__", &Team::repr);

  nb::class_<ArrayBase>(m, "ArrayBase")
      .def(nb::init<>())
      .def("_init", &initArray)
      .def("_init_index", [](ArrayBase& v, const ArrayBase& of, nb::handle key) { indexInto(v, of, key); })
      .def("_init_view", [](ArrayBase& a, const ArrayBase& of, size_t offset, std::vector<int64_t> shape,
                            std::vector<int64_t> strides) {  // same allocation and dtype as `of`
        initArray(a, of.alloc, offset, std::move(shape), std::move(strides), of.dtype.code, of.dtype.bits);
      })
      .def_prop_ro("allocation", [](const ArrayBase& a) { return a.alloc; })
      .def_prop_ro("_offset", [](const ArrayBase& a) { return a.offset; })
      .def_prop_ro("shape", [](const ArrayBase& a) {
        nb::list l;
        for (int64_t s : a.shape) l.append(s);
        return nb::tuple(l);
      })
      .def_prop_ro("_strides", [](const ArrayBase& a) { return a.strides; })
      .def_prop_ro("_dtype", [](const ArrayBase& a) { return std::make_tuple(a.dtype.code, a.dtype.bits); })
      .def_prop_ro("itemsize", [](const ArrayBase& a) { return a.itemsize; })
      .def_prop_ro("address", [](const ArrayBase& a) { return reinterpret_cast<uintptr_t>(a.data()); })
      .def_prop_ro("is_contiguous", &ArrayBase::contiguous)
      .def("_export", &exportView)
      .def("_mark_interfaced", &ArrayBase::markInterfaced);

  // put/get: the symmetric side is a tether array (fast path) or any array naming symmetric memory (e.g. a
  // numpy/torch view of one: checked by tether); the local side anything with DLPack or the buffer protocol.
  auto put = [](const ArrayBase& dest, nb::handle src, int pe, bool nbi, uintptr_t stream, bool on_stream) {
    tether_t w = dest.alloc->state->live();
    Local l(src, false);
    Side d = sideOf(dest);
    matchSides("put", d, l.side(), dest.dtype, l.dtype());
    transfer(w, Dir::Put, d, l.side(), pe, nbi, stream, on_stream);
  };
  auto get = [](nb::handle dest, const ArrayBase& src, int pe, bool nbi, uintptr_t stream, bool on_stream) {
    tether_t w = src.alloc->state->live();
    Local l(dest, true);
    Side s = sideOf(src);
    matchSides("get", s, l.side(), src.dtype, l.dtype());
    transfer(w, Dir::Get, s, l.side(), pe, nbi, stream, on_stream);
  };
  m.def("put", put, nb::arg("dest"), nb::arg("src"), nb::arg("pe"), nb::arg("nbi") = false, nb::arg("stream") = 0,
        nb::arg("on_stream") = false);
  m.def("get", get, nb::arg("dest"), nb::arg("src"), nb::arg("pe"), nb::arg("nbi") = false, nb::arg("stream") = 0,
        nb::arg("on_stream") = false);
  // Raw forms with a symmetric side given as an array-like (any producer): tether checks that it is symmetric.
  m.def("put_any", [](const World& w, nb::ndarray<> dest, nb::ndarray<nb::ro> src, int pe, bool nbi) {
    Side d = sideOf(dest), s = sideOf(src);
    matchSides("put", d, s, dest.dtype(), src.dtype());
    transfer(w.state->live(), Dir::Put, d, s, pe, nbi, 0, false);
  });
  m.def("get_any", [](const World& w, nb::ndarray<> dest, nb::ndarray<nb::ro> src, int pe, bool nbi) {
    Side d = sideOf(dest), s = sideOf(src);
    matchSides("get", s, d, src.dtype(), dest.dtype());
    transfer(w.state->live(), Dir::Get, s, d, pe, nbi, 0, false);
  });
  // Raw byte put/get by address (the cheapest call; the benchmark's lower bound).
  m.def("putmem", [](const World& w, uintptr_t dest, uintptr_t src, size_t n, int pe) {
    check(tether_put(w.state->live(), reinterpret_cast<void*>(dest), reinterpret_cast<const void*>(src), n, pe));
  });
  m.def("getmem", [](const World& w, uintptr_t dest, uintptr_t src, size_t n, int pe) {
    check(tether_get(w.state->live(), reinterpret_cast<void*>(dest), reinterpret_cast<const void*>(src), n, pe));
  });

  // For the overhead benchmark (python/benchmarks/put_overhead.py): `iters` blocking puts of nbytes from src to dest
  // on pe in a C loop; returns the seconds they took (the C call's cost, measured in the same process and buffers).
  m.def("_bench_put_loop", [](const World& w, uintptr_t dest, uintptr_t src, size_t nbytes, int pe, long iters) {
    tether_t t = w.state->live();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i)
      check(tether_put(t, reinterpret_cast<void*>(dest), reinterpret_cast<const void*>(src), nbytes, pe));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });

  m.def("team_coll", &teamColl, nb::arg("team"), nb::arg("kind"), nb::arg("dest"), nb::arg("src"), nb::arg("op"),
        nb::arg("root"), nb::arg("stream") = 0, nb::arg("on_stream") = false);
  m.def("atomic", &atomic, nb::arg("dest"), nb::arg("op"), nb::arg("value").none(), nb::arg("cond").none(),
        nb::arg("pe"));
  m.def("wait_until", [](const ArrayBase& a, int cmp, nb::handle v) { waitOrTest(a, cmp, v, true); });
  m.def("test", [](const ArrayBase& a, int cmp, nb::handle v) { return waitOrTest(a, cmp, v, false); });

  m.def("signal_op", [](const ArrayBase& sig, uint64_t value, int op, int pe, uintptr_t stream, bool on_stream) {
    tether_t w = sig.alloc->state->live();
    uint64_t* p = signalWord("signal_op", sig);
    auto o = static_cast<tether_signal_op_t>(op);
    if (on_stream) check(tether_signal_op_on_stream(w, p, value, o, pe, reinterpret_cast<void*>(stream)));
    else check(tether_signal_op(w, p, value, o, pe));
  });
  m.def("signal_fetch", [](const ArrayBase& sig) {
    uint64_t v = 0;
    check(tether_signal_fetch(sig.alloc->state->live(), signalWord("signal_fetch", sig), &v));
    return v;
  });
  m.def("signal_wait_until", [](const ArrayBase& sig, int cmp, uint64_t value, uintptr_t stream, bool on_stream) {
    tether_t w = sig.alloc->state->live();
    uint64_t* p = signalWord("signal_wait_until", sig);
    auto c = static_cast<tether_cmp_t>(cmp);
    uint64_t seen = 0;
    if (on_stream) check(tether_signal_wait_until_on_stream(w, p, c, value, reinterpret_cast<void*>(stream)));
    else checkWithoutGil([&] { return tether_signal_wait_until(w, p, c, value, &seen); });
    return seen;
  });
  m.def("put_signal", [](const ArrayBase& dest, nb::handle src, const ArrayBase& sig, uint64_t value,
                         int op, int pe, bool nbi, uintptr_t stream, bool on_stream) {
    tether_t w = dest.alloc->state->live();
    Local l(src, false);
    Side d = sideOf(dest);
    const Side& s = l.side();
    matchSides("put_signal", d, s, dest.dtype, l.dtype());
    if (!d.contiguous() || !s.contiguous())
      fail(TETHER_ERR_INVALID_ARG, "put_signal: both sides must be contiguous (use put + signal_op for strided data)");
    uint64_t* p = signalWord("put_signal", sig);
    auto o = static_cast<tether_signal_op_t>(op);
    size_t n = elems(d) * d.itemsize;
    if (on_stream)
      check(tether_putmem_signal_on_stream(w, d.ptr, s.ptr, n, p, value, o, pe, reinterpret_cast<void*>(stream)));
    else check((nbi ? tether_put_signal_nbi : tether_put_signal)(w, d.ptr, s.ptr, n, p, value, o, pe));
  });
}
