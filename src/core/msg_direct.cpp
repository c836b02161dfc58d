// MsgDirect (core/msg_direct.h): rendezvous messages on one host read by the receiver from the send buffer -- the
// sender's offers and their claim words, the receiver's reads (gets, process_vm_readv, CUDA IPC).
#include "core/msg_direct.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace tether {

MsgDirect::MsgDirect(const Settings& s, StreamWords& words, Owner& owner)
    : s_(s),
      words_(words),
      owner_(owner),
      cmaOk_(static_cast<size_t>(s.nPes), 1),
      ipcOk_(static_cast<size_t>(s.nPes), 1),
      ipcRefused_(static_cast<size_t>(s.nPes), 0) {}

bool MsgDirect::offer(Offer& o, int pe, const void* src, size_t bytes, bool gpu, Ticket* t) {
  // (No word free: the ring path.)
  if (!s_.on || !links_.mapped || !links_.mapped(pe) || !words_.any()) return false;
  SegKind kind = SegKind::Host;
  uint64_t at = 0;
  uint64_t how = 0;
  if (links_.symmetric(src, bytes, gpu, &kind, &at))
    how = kViaGet | static_cast<uint64_t>(kind) << 8;
  else if (!gpu)
    how = kViaCma;
  else if (s_.ipc && exportIpc(o, pe, src, bytes))
    how = kViaIpc;
  if (!how) return false;
  words_.take(&o.claim);  // (one is free: checked above)
  __atomic_store_n(words_.trigger(o.claim), kOpen, __ATOMIC_RELEASE);
  t->how = how;
  t->at = (how & 0xff) == kViaGet ? at : reinterpret_cast<uint64_t>(src);
  t->claim = static_cast<uint64_t>(reinterpret_cast<char*>(words_.trigger(o.claim)) - links_.region);
  t->pid = static_cast<uint32_t>(getpid());
  offers_.push_back(&o);
  return true;
}

// A private GPU send buffer offered by CUDA IPC: o.ipc names its region for the receiver, which opens it (a mapping it
// caches) and copies from it. A self-send needs none: the receiver is this process and copies from the address
// (cudaIpcOpenMemHandle refuses a handle of its own process). False when the buffer cannot be exported (managed or
// pool memory, ...; logged once per reason), or there is no GPU here: the ring carries the message.
bool MsgDirect::exportIpc(Offer& o, int pe, const void* src, size_t bytes) {
  if (!links_.gpu) return false;
  if (pe == s_.me) return true;
  std::unique_ptr<GpuIpcRef> ref(new GpuIpcRef());
  const Status s = links_.gpu->exportRegion(src, bytes, ref.get());
  if (!s.isOk()) {
    if (ipcRefusals_.insert(s.message()).second)
      TETHER_LOG_INFO(LogSys::Core, "PE %d: rendezvous sends from such GPU buffers go through the ring (%s)", s_.me,
                      s.message().c_str());
    return false;
  }
  o.ipc = std::move(ref);
  return true;
}

void MsgDirect::poll(bool* did) {
  for (auto it = offers_.begin(); it != offers_.end();) {
    Offer& o = **it;
    if (__atomic_load_n(words_.trigger(o.claim), __ATOMIC_ACQUIRE) != kDone) {
      ++it;
      continue;
    }
    it = offers_.erase(it);
    owner_.delivered(o);
    *did = true;
  }
}

bool MsgDirect::withdraw(Offer& o) {
  uint64_t open = kOpen;
  if (!__atomic_compare_exchange_n(words_.trigger(o.claim), &open, kWithdrawn, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return false;
  offers_.remove(&o);
  o.claim = kNone;  // never given back: the receiver's claim may still come, and must keep failing
  return true;
}

void MsgDirect::release(Offer& o) {
  if (o.claim != kNone) {
    words_.release(o.claim);
    offers_.remove(&o);
    o.claim = kNone;
  }
  o.ipc.reset();
}

MsgDirect::Outcome MsgDirect::read(const char* call, int src, const Ticket& t, const GpuIpcRef& ipc, void* dst,
                                   bool gpu, size_t n, Status* result) {
  *result = Status::ok();
  const uint64_t how = t.how & 0xff;
  const size_t from = static_cast<size_t>(src);
  const bool canRead = how == kViaGet || (how == kViaCma && !gpu && cmaOk_[from]) ||
                       (how == kViaIpc && links_.gpu && (src == s_.me || ipcOk_[from]));
  char* region = links_.mapped ? links_.mapped(src) : nullptr;
  if (!canRead || !region) return Outcome::Ring;
  auto* claim = reinterpret_cast<uint64_t*>(region + t.claim);
  uint64_t open = kOpen;
  if (!__atomic_compare_exchange_n(claim, &open, kRead, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return Outcome::Withdrawn;
  // Claimed: from here on the sender waits for kDone, or for a CTS where the read cannot be made after all.
  if (n && how == kViaGet) {  // the same object in this PE's copy of the segment, read from src's
    *result = links_.get(call, dst, src, static_cast<SegKind>(t.how >> 8), t.at, n);
  } else if (n && how == kViaIpc) {  // into GPU or host memory
    const char* bytes = reinterpret_cast<const char*>(t.at);  // a self-send: the buffer itself
    if (src != s_.me) {
      char* mapped = nullptr;
      const Status o = links_.gpu->openRegion(static_cast<uint64_t>(src), ipc, &mapped);
      // This buffer only (src's open ones are at the most kept, or one it freed still holds the range here).
      if (!o.isOk() && (o.code() == TETHER_ERR_NO_MEMORY || o.code() == TETHER_ERR_UNSUPPORTED)) {
        const char bit = o.code() == TETHER_ERR_NO_MEMORY ? 1 : 2;
        if (!(ipcRefused_[from] & bit))
          TETHER_LOG_INFO(LogSys::Core, "PE %d: %s: rendezvous messages from such GPU buffers of PE %d come through "
                          "the ring", s_.me, o.message().c_str(), src);
        ipcRefused_[from] = static_cast<char>(ipcRefused_[from] | bit);
        return Outcome::Ring;  // claimed: the sender streams it when the CTS comes
      }
      if (!o.isOk()) {
        ipcOk_[from] = 0;
        TETHER_LOG_INFO(LogSys::Core, "PE %d: cannot open PE %d's GPU buffers by CUDA IPC (%s): its rendezvous "
                        "messages from private GPU buffers come through the ring", s_.me, src, o.message().c_str());
        return Outcome::Ring;  // claimed: the sender streams it when the CTS comes
      }
      bytes = mapped + ipc.offset;
    }
    *result = links_.gpu->copy(dst, bytes, n, false).withContext(call);  // blocking: the mapping is free again
  } else if (n && !cmaRead(static_cast<pid_t>(t.pid), t.at, dst, n)) {
    cmaOk_[from] = 0;
    TETHER_LOG_INFO(LogSys::Core, "PE %d: process_vm_readv from PE %d (pid %llu) refused (%s): its rendezvous "
                    "messages come through the ring", s_.me, src, static_cast<unsigned long long>(t.pid),
                    std::strerror(errno));
    return Outcome::Ring;  // claimed: the sender streams it when the CTS comes
  }
  __atomic_store_n(claim, kDone, __ATOMIC_RELEASE);  // the sender's send is complete
  return Outcome::Read;
}

bool MsgDirect::cmaRead(pid_t pid, uint64_t from, void* to, size_t n) {
  size_t done = 0;
  while (done < n) {
    iovec local{static_cast<char*>(to) + done, n - done};
    iovec remote{reinterpret_cast<void*>(from + done), n - done};
    const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace tether
