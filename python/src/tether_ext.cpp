// tether._tether: the nanobind extension behind the `tether` Python package (python/tether/__init__.py).
//
// Thin by design: the C API (include/tether/*.h) does the checking and reports through tether_last_error(); the
// extension turns a failed status into a Python `tether.Error(status, message)`, keeps the life of symmetric
// allocations honest, and moves the per-call work of put/get (pointer, dtype, shape, strides) into C++ so that a small
// put costs little more than the C call. This file binds; the parts are ext_*.h/.cpp (python/src/README.md).
// Everything user-facing (module functions, SymmetricArray, slicing, stream objects) is in python/tether/*.py,
// except Team, bound here as it is (tether.Team).
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

#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ext_array.h"
#include "ext_common.h"
#include "ext_ops.h"
#include "ext_team.h"
#include "ext_transfer.h"
#include "ext_world.h"

using namespace tether_py;  // the extension's parts (python/src/README.md)

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
