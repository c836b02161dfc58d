// CPU emulation of the stream-op layer (contract: core/stream_ops.h). One worker thread per emulated stream runs its
// queue in order; the null stream is a stream of its own, made on first use. For tests without a GPU: HOST and
// STATIC segments only (CPU addresses).
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "core/stream/stream_coll_call.h"
#include "core/stream/stream_proxy_call.h"
#include "core/stream_ops.h"

namespace tether {
namespace {

const char* condName(StreamCond c) {
  switch (c) {
    case StreamCond::Geq: return "GEQ (cyclic)";
    case StreamCond::Eq: return "EQ";
    case StreamCond::And: return "AND";
    case StreamCond::Nor: return "NOR";
  }
  return "?";
}

bool condHolds(uint64_t x, StreamCond c, uint64_t v) {
  switch (c) {
    case StreamCond::Geq: return static_cast<int64_t>(x - v) >= 0;
    case StreamCond::Eq: return x == v;
    case StreamCond::And: return (x & v) != 0;
    case StreamCond::Nor: return ~(x | v) != 0;
  }
  return false;
}

// An emulated stream: operations run in order on one worker thread. The first failure is kept (sticky); later
// operations are skipped, as a CUDA stream stops at its first error.
class CpuStream {
 public:
  CpuStream() : thread_([this] { run(); }) {}
  ~CpuStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // always: op runs even after a failure (follow()'s marker must report it rather than never run).
  void push(std::function<Status()> op, bool always = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(Entry{std::move(op), always});
      ++enqueued_;
    }
    cv_.notify_all();
  }
  // The stream's first failure so far (ok if none).
  Status error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  Status synchronize() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = enqueued_;
    cv_.wait(lock, [&] { return finished_ >= target; });
    return error_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ with nothing left
      Entry e = std::move(queue_.front());
      queue_.pop_front();
      const bool skip = !error_.isOk() && !e.always;
      lock.unlock();
      Status s = skip ? Status::ok() : e.op();
      lock.lock();
      if (!s.isOk() && error_.isOk()) error_ = s;
      ++finished_;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  struct Entry {
    std::function<Status()> op;
    bool always;
  };
  std::deque<Entry> queue_;
  uint64_t enqueued_ = 0, finished_ = 0;
  Status error_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

class CpuStreamOps : public StreamOps {
 public:
  CpuStreamOps(double timeout, bool hostAtomics, bool capturing)
      : timeout_(timeout > 0 ? timeout : 1e12), hostAtomics_(hostAtomics), capturing_(capturing) {}

  const char* name() const override { return "cpu-emulation"; }
  bool gpuAddresses() const override { return false; }
  bool hostAtomics() const override { return hostAtomics_; }
  Status capturing(void*, bool* out) override {
    *out = capturing_;
    return Status::ok();
  }

  Status copy(void* stream, void* dst, const void* src, size_t n) override {
    return enqueue(stream, [dst, src, n] {
      std::memcpy(dst, src, n);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      return Status::ok();
    });
  }

  Status memOps(void* stream, const StreamMemOp* ops, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const StreamMemOp& o = ops[i];
      if ((o.kind == StreamMemOp::Write && o.width != 4 && o.width != 8) ||
          (o.kind != StreamMemOp::Barrier && !o.addr))
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream memop %zu: bad width %u or null address", i, o.width);
    }
    std::vector<StreamMemOp> copyOps(ops, ops + n);  // values captured now
    const double timeout = timeout_;
    return enqueue(stream, [copyOps, timeout] {
      for (const StreamMemOp& o : copyOps) {
        switch (o.kind) {
          case StreamMemOp::Barrier: std::atomic_thread_fence(std::memory_order_seq_cst); break;
          case StreamMemOp::Write: {
            const int order = o.release ? __ATOMIC_RELEASE : __ATOMIC_RELAXED;
            if (o.release) std::atomic_thread_fence(std::memory_order_seq_cst);
            if (o.width == 4)
              __atomic_store_n(static_cast<uint32_t*>(o.addr), static_cast<uint32_t>(o.value), order);
            else
              __atomic_store_n(static_cast<uint64_t*>(o.addr), o.value, order);
            break;
          }
          case StreamMemOp::Wait: {
            auto* w = static_cast<const uint64_t*>(o.addr);
            SpinWait spin(timeout);
            uint64_t seen;
            while (!condHolds(seen = __atomic_load_n(w, __ATOMIC_ACQUIRE), o.cond, o.value))
              if (!spin.next())
                TETHER_FAIL(TETHER_ERR_TIMEOUT, "stream wait (CPU emulation): timed out after %.1f s "
                            "(TETHER_TIMEOUT) waiting for the word at %p %s 0x%llx; last seen 0x%llx", timeout,
                            static_cast<const void*>(w), condName(o.cond), static_cast<unsigned long long>(o.value),
                            static_cast<unsigned long long>(seen));
            break;
          }
        }
      }
      return Status::ok();
    });
  }

  Status store(void* stream, void* addr, uint64_t value, unsigned width) override {
    if (width != 1 && width != 2) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream store: width %u (1 or 2)", width);
    return enqueue(stream, [addr, value, width] {
      if (width == 1)
        __atomic_store_n(static_cast<uint8_t*>(addr), static_cast<uint8_t>(value), __ATOMIC_RELAXED);
      else
        __atomic_store_n(static_cast<uint16_t*>(addr), static_cast<uint16_t>(value), __ATOMIC_RELAXED);
      return Status::ok();
    });
  }

  Status signal(void* stream, uint64_t* addr, uint64_t value, tether_signal_op_t op) override {
    return enqueue(stream, [addr, value, op] {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (op == TETHER_SIGNAL_ADD)
        __atomic_fetch_add(addr, value, __ATOMIC_RELEASE);
      else
        __atomic_store_n(addr, value, __ATOMIC_RELEASE);
      return Status::ok();
    });
  }

  Status amo(void* stream, void* target, const AmoArgs& a, void* fetched) override {
    return enqueue(stream, [target, a, fetched] {
      uint64_t old = 0;
      const RemoteAddr ra{static_cast<char*>(target), 0, SegKind::Host, nullptr};
      TETHER_TRY(shmTransportOps().amo(nullptr, 0, ra, a, &old));
      if (fetched) std::memcpy(fetched, &old, a.width);
      return Status::ok();
    });
  }

  Status waitCmp(void* stream, const uint64_t* addr, tether_cmp_t cmp, uint64_t value, bool isSigned,
                 uint64_t timeoutNs) override {
    const double timeout = timeoutNs ? static_cast<double>(timeoutNs) * 1e-9 : 1e12;
    return enqueue(stream, [addr, cmp, value, isSigned, timeout] {
      SpinWait spin(timeout);
      uint64_t seen;
      auto holds = [&](uint64_t x) {
        using device::Cmp;  // the device API's comparison, shared with the kernels
        const Cmp c = static_cast<Cmp>(cmp);
        return isSigned ? device::detail::compare(static_cast<int64_t>(x), c, static_cast<int64_t>(value))
                        : device::detail::compare(x, c, value);
      };
      while (!holds(seen = __atomic_load_n(addr, __ATOMIC_ACQUIRE)))
        if (!spin.next())
          TETHER_FAIL(TETHER_ERR_TIMEOUT, "stream wait (CPU emulation): timed out after %.1f s (TETHER_TIMEOUT) "
                      "waiting for the word at %p, comparison %d, value 0x%llx; last seen 0x%llx", timeout,
                      static_cast<const void*>(addr), static_cast<int>(cmp), static_cast<unsigned long long>(value),
                      static_cast<unsigned long long>(seen));
      return Status::ok();
    });
  }

  Status increment(void* stream, uint64_t* const* words, size_t n) override {
    std::vector<uint64_t*> ws(words, words + n);
    return enqueue(stream, [ws] {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      for (uint64_t* w : ws) __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
      return Status::ok();
    });
  }

  Status waitReach(void* stream, const uint64_t* const* reach, const uint64_t* const* target, size_t n,
                   uint64_t timeoutNs) override {
    std::vector<const uint64_t*> rs(reach, reach + n), ts(target, target + n);
    const double timeout = timeoutNs ? static_cast<double>(timeoutNs) * 1e-9 : 1e12;
    return enqueue(stream, [rs, ts, timeout] {
      std::vector<uint64_t> want(ts.size());
      for (size_t i = 0; i < ts.size(); ++i) want[i] = __atomic_load_n(ts[i], __ATOMIC_ACQUIRE);
      SpinWait spin(timeout);
      for (size_t i = 0; i < rs.size(); ++i) {
        uint64_t seen;
        while (static_cast<int64_t>((seen = __atomic_load_n(rs[i], __ATOMIC_ACQUIRE)) - want[i]) < 0)
          if (!spin.next())
            TETHER_FAIL(TETHER_ERR_TIMEOUT, "stream wait (CPU emulation): timed out after %.1f s (TETHER_TIMEOUT) "
                        "waiting for the word at %p to reach 0x%llx (the word at %p); last seen 0x%llx", timeout,
                        static_cast<const void*>(rs[i]), static_cast<unsigned long long>(want[i]),
                        static_cast<const void*>(ts[i]), static_cast<unsigned long long>(seen));
      }
      return Status::ok();
    });
  }

  Status proxy(void* stream, const tether_device_handle_t& handle, const Op& call) override {
    if (handle.flags & TETHER_DEVICE_GPU)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream proxy call (CPU emulation): needs the CPU device handle");
    return enqueue(stream, [handle, call] {
      streamdetail::runProxyCall(handle, call);  // device API failures abort, as a GPU kernel traps
      return Status::ok();
    });
  }

  Status coll(void* stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
              const StreamCollCall& call) override {
    if (handle.flags & TETHER_DEVICE_GPU)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream collective (CPU emulation): needs the CPU device handle");
    return enqueue(stream, [handle, team, call] {
      streamdetail::runCollCall<device::Scope::Thread>(handle, team, call);  // failures abort, as a GPU kernel traps
      return Status::ok();
    });
  }

  Status follow(void* stream, void* other) override {
    CpuStream *s = nullptr, *o = nullptr;
    TETHER_TRY(lookup(stream, &s));
    TETHER_TRY(lookup(other, &o));
    if (s == o) return Status::ok();
    struct Marker {
      Status otherError;          // written before reached's release store
      std::atomic<bool> reached{false};
    };
    auto mark = std::make_shared<Marker>();
    o->push([mark, o] {
      mark->otherError = o->error();
      mark->reached.store(true, std::memory_order_release);
      return Status::ok();
    }, true);
    const double timeout = timeout_;
    s->push([mark, timeout] {
      SpinWait spin(timeout);
      while (!mark->reached.load(std::memory_order_acquire))
        if (!spin.next())
          TETHER_FAIL(TETHER_ERR_TIMEOUT, "stream follow (CPU emulation): timed out after %.1f s (TETHER_TIMEOUT) "
                      "waiting for the stream it follows", timeout);
      return mark->otherError.withContext("stream follow (CPU emulation): the stream it follows failed");
    });
    return Status::ok();
  }

  Status hostCall(void* stream, std::function<void()> fn) override {
    return enqueue(stream, [fn = std::move(fn)] {
      fn();
      std::atomic_thread_fence(std::memory_order_seq_cst);
      return Status::ok();
    });
  }

  Status createStream(void** out) override {
    if (!out) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "createStream: out is NULL");
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace_back(new CpuStream());
    *out = streams_.back().get();
    return Status::ok();
  }

  Status destroyStream(void* stream) override {
    std::unique_ptr<CpuStream> victim;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = streams_.begin(); it != streams_.end(); ++it)
        if (it->get() == stream) {
          victim = std::move(*it);
          streams_.erase(it);
          break;
        }
    }
    if (!victim) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "destroyStream: %p is not a stream of this emulation", stream);
    Status s = victim->synchronize();
    return s;  // victim's destructor joins its worker
  }

  Status synchronize(void* stream) override {
    CpuStream* s = nullptr;
    TETHER_TRY(lookup(stream, &s));
    return s->synchronize();
  }

 private:
  Status lookup(void* stream, CpuStream** out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stream) {
      if (!nullStream_) nullStream_.reset(new CpuStream());
      *out = nullStream_.get();
      return Status::ok();
    }
    for (auto& s : streams_)
      if (s.get() == stream) return *out = s.get(), Status::ok();
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream %p is not a stream of the CPU emulation (createStream)", stream);
  }

  template <typename F>
  Status enqueue(void* stream, F&& f) {
    CpuStream* s = nullptr;
    TETHER_TRY(lookup(stream, &s));
    s->push(std::forward<F>(f));
    return Status::ok();
  }

  double timeout_;
  bool hostAtomics_;
  bool capturing_;  // every stream reports a CUDA graph capture (tests of the captured forms; nothing is recorded)
  std::mutex mu_;
  std::vector<std::unique_ptr<CpuStream>> streams_;
  std::unique_ptr<CpuStream> nullStream_;
};

}  // namespace

std::unique_ptr<StreamOps> createCpuStreamOps(double timeoutSeconds, bool hostAtomics, bool capturing) {
  return std::unique_ptr<StreamOps>(new CpuStreamOps(timeoutSeconds, hostAtomics, capturing));
}

}  // namespace tether
