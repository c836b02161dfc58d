// Executes one proxy call (an Op, core/op.h; contract in core/stream_ops.h) with the device API, so the stream path to proxied peers reuses the
// ring protocol, flow control and bounded waits of issue #5 unchanged. Compiled for the GPU (the one-thread kernel of
// core/stream/cuda/stream_kernels.cu) and for the CPU (the emulated stream's worker thread,
// core/stream/stream_ops_cpu.cpp).
// Every call uses the blocking device form and ends with quiet: complete before the stream's next operation.
#pragma once

#include "core/stream_ops.h"
#include "tether/device.cuh"

namespace tether {
namespace streamdetail {

template <typename T>
TETHER_HD void proxyAmoTyped(const tether_device_handle_t& h, const Op& c) {
  namespace dv = tether::device;
  T* d = static_cast<T*>(c.dest);
  const T v = static_cast<T>(c.value), cond = static_cast<T>(c.cond);
  T old = 0;
  switch (c.amo) {
    case TETHER_AMO_FETCH: old = dv::atomic_fetch(h, static_cast<const T*>(d), c.pe); break;
    case TETHER_AMO_SET: dv::atomic_set(h, d, v, c.pe); break;
    case TETHER_AMO_SWAP: old = dv::atomic_swap(h, d, v, c.pe); break;
    case TETHER_AMO_COMPARE_SWAP: old = dv::atomic_compare_swap(h, d, cond, v, c.pe); break;
    case TETHER_AMO_INC: dv::atomic_inc(h, d, c.pe); break;
    case TETHER_AMO_FETCH_INC: old = dv::atomic_fetch_inc(h, d, c.pe); break;
    case TETHER_AMO_ADD: dv::atomic_add(h, d, v, c.pe); break;
    case TETHER_AMO_FETCH_ADD: old = dv::atomic_fetch_add(h, d, v, c.pe); break;
    case TETHER_AMO_AND: dv::atomic_and(h, d, v, c.pe); break;
    case TETHER_AMO_FETCH_AND: old = dv::atomic_fetch_and(h, d, v, c.pe); break;
    case TETHER_AMO_OR: dv::atomic_or(h, d, v, c.pe); break;
    case TETHER_AMO_FETCH_OR: old = dv::atomic_fetch_or(h, d, v, c.pe); break;
    case TETHER_AMO_XOR: dv::atomic_xor(h, d, v, c.pe); break;
    case TETHER_AMO_FETCH_XOR: old = dv::atomic_fetch_xor(h, d, v, c.pe); break;
    default: break;  // checked by the caller (core/stream.cpp)
  }
  if (c.fetched) *static_cast<T*>(c.fetched) = old;
}

// p of 1, 2, 4 or 8 bytes: one inline descriptor (the value travels in the descriptor, not through a buffer).
TETHER_HD void proxyPutInline(const tether_device_handle_t& h, const Op& c) {
  namespace dd = tether::device::detail;
  const dd::Target t = dd::target(h, c.dest, c.pe);
  if (t.ptr)
    dd::copyBytes<tether::device::Scope::Thread>(t.ptr, &c.value, c.nbytes);  // reachable after all
  else
    dd::proxyPutInline(h, c.pe, t, &c.value, c.nbytes);
}

// viaRing RMWs: the descriptor goes to the ring whatever the PE's reach, and the call waits for it (the handle's
// flags need not say PROXY_MIXED, so quiet alone would not).
TETHER_HD void ringRmw(const tether_device_handle_t& h, const Op& c) {
  namespace dv = tether::device;
  namespace dd = tether::device::detail;
  if (c.kind == Op::Amo) {
    const dd::Target t = dd::target(h, c.dest, c.pe);
    const uint64_t old = dd::proxyAmo(h, c.pe, t, c.amo, static_cast<unsigned>(c.nbytes),
                                      c.value, c.cond, c.fetched != nullptr);
    if (c.fetched && c.nbytes == 4) *static_cast<uint32_t*>(c.fetched) = static_cast<uint32_t>(old);
    if (c.fetched && c.nbytes == 8) *static_cast<uint64_t*>(c.fetched) = old;
  } else {
    if (c.kind == Op::PutSignal) {  // the data as usual, complete before the signal is posted
      dv::putmem(h, c.dest, c.src, c.nbytes, c.pe);
      dv::quiet(h);
    }
    dd::proxySignal(h, c.pe, dd::target(h, c.sig, c.pe), c.value, static_cast<dv::SignalOp>(c.sigOp));
  }
  dd::proxyQuiet(h);
}

TETHER_HD void runProxyCall(const tether_device_handle_t& h, const Op& c) {
  namespace dv = tether::device;
  if (c.viaRing && (c.kind == Op::Amo || c.kind == Op::Signal || c.kind == Op::PutSignal)) {
    ringRmw(h, c);
    return;
  }
  switch (c.kind) {
    case Op::Put: dv::putmem(h, c.dest, c.src, c.nbytes, c.pe); break;
    case Op::Get: dv::getmem(h, c.dest, c.src, c.nbytes, c.pe); break;
    case Op::P: proxyPutInline(h, c); break;
    case Op::PutSignal:
      dv::putmem_signal(h, c.dest, c.src, c.nbytes, c.sig, c.value, static_cast<dv::SignalOp>(c.sigOp), c.pe);
      break;
    case Op::Signal: dv::signal_op(h, c.sig, c.value, static_cast<dv::SignalOp>(c.sigOp), c.pe); break;
    case Op::Amo:
      if (c.nbytes == 4)
        proxyAmoTyped<uint32_t>(h, c);
      else
        proxyAmoTyped<uint64_t>(h, c);
      break;
    case Op::PutRuns:
    case Op::GetRuns: {  // every run nbi (the proxy batches them), one quiet below
      int64_t pos = 0;
      for (uint64_t i = 0; i < c.nbytes; ++i) {
        const int64_t disp = c.runs[2 * i], bytes = c.runs[2 * i + 1];
        if (c.kind == Op::PutRuns)
          dv::putmem_nbi(h, static_cast<char*>(c.dest) + disp, static_cast<const char*>(c.src) + pos,
                         static_cast<size_t>(bytes), c.pe);
        else
          dv::getmem_nbi(h, static_cast<char*>(c.dest) + pos, static_cast<const char*>(c.src) + disp,
                         static_cast<size_t>(bytes), c.pe);
        pos += bytes;
      }
      break;
    }
    default: break;  // not proxy calls (core/stream.cpp never sends them)
  }
  dv::quiet(h);
}

}  // namespace streamdetail
}  // namespace tether
