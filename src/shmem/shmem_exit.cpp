// shmem_global_exit: ends every PE of the job with the caller's status (OpenSHMEM 1.5, SHMEM_GLOBAL_EXIT).
//
// Two channels, so it works under any launcher:
//  - Through tether: every PE owns one symmetric exit word (HOST heap) and a watcher thread that polls it (every
//    kPollMs) from shmem_init to shmem_finalize. The caller stores 0x100 | status into every other PE's word; each
//    watcher flushes stdio and _exits with that status, whatever its PE is doing (a barrier, a wait, user code).
//  - Through the launcher: under tetherrun (TETHER_CONTROL_FD, tools/tetherrun), the caller first writes
//    "global_exit <pe> <status>\n" to the inherited control pipe; tetherrun stops the PEs still running (those not
//    initialised yet or already finalised included) and exits with that status.
// Without either (a PE that has not called shmem_init, under mpirun), only the caller ends.
#include <shmem.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "shmem_internal.h"

namespace tether_shmem {
namespace {

constexpr int kPollMs = 5;
constexpr uint64_t kExitFlag = 0x100;  // word value: kExitFlag | (status & 0xff); 0 while nobody exits

struct ExitState {
  std::mutex mutex;  // init / finalize / the watcher's stop flag
  std::condition_variable wake;
  tether_t world = nullptr;
  uint64_t* word = nullptr;  // this PE's exit word (symmetric)
  bool stop = false;
  std::thread watcher;
};
ExitState& exitState() {
  static ExitState s;
  return s;
}

[[noreturn]] void exitNow(int status) {
  std::fflush(nullptr);
  ::_exit(status);
}

void watch(uint64_t* word) {
  ExitState& s = exitState();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stop) {
    const uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (v & kExitFlag) exitNow(static_cast<int>(v & 0xff));
    s.wake.wait_for(lock, std::chrono::milliseconds(kPollMs));
  }
}

// Tells tetherrun (when it started us) that this PE ends the job with `status`. One write of a short line: atomic
// on a pipe, so lines of several PEs never interleave.
void notifyLauncher(int me, int status) {
  const char* fdText = std::getenv("TETHER_CONTROL_FD");
  if (fdText == nullptr || *fdText == '\0') return;
  char* end = nullptr;
  const long fd = std::strtol(fdText, &end, 10);
  if (*end != '\0' || fd < 0 || fd > 1 << 20) return;
  char line[64];
  const int len = std::snprintf(line, sizeof line, "global_exit %d %d\n", me, status);
  ssize_t k;
  do k = ::write(static_cast<int>(fd), line, static_cast<size_t>(len));
  while (k < 0 && errno == EINTR);
}

}  // namespace

void shmemExitInit(tether_t world) {
  void* word = nullptr;
  if (tether_malloc_kind(world, TETHER_SEG_HOST, 64, sizeof(uint64_t), &word) != TETHER_SUCCESS)
    shmemAbort("shmem_init");
  *static_cast<uint64_t*>(word) = 0;
  ExitState& s = exitState();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.world = world;
  s.word = static_cast<uint64_t*>(word);
  s.stop = false;
  s.watcher = std::thread(watch, s.word);
}

void shmemExitFinalize() {
  ExitState& s = exitState();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.word == nullptr) return;
    s.stop = true;
  }
  s.wake.notify_all();
  s.watcher.join();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (tether_free(s.world, s.word) != TETHER_SUCCESS) shmemAbort("shmem_finalize");
  s.word = nullptr;
  s.world = nullptr;
}

[[noreturn]] void shmemGlobalExit(int status) {
  ExitState& s = exitState();
  tether_t world = nullptr;
  uint64_t* word = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    world = s.world;
    word = s.word;
  }
  const int me = world ? tether_my_pe(world) : -1;
  notifyLauncher(me, status & 0xff);
  if (world != nullptr) {
    const uint64_t v = kExitFlag | static_cast<uint64_t>(status & 0xff);
    const int n = tether_n_pes(world);
    // Best effort: a PE that cannot be reached is left to the launcher (its error is not worth reporting now).
    for (int pe = 0; pe < n; ++pe)
      if (pe != me) (void)tether_uint64_atomic_set(world, word, v, pe);
    (void)tether_quiet(world);
  }
  exitNow(status);
}

}  // namespace tether_shmem
