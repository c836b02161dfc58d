#include "core/sync_failure.h"

#include "core/op.h"
#include "core/sync_schedule.h"
#include "core/world.h"

namespace tether {

void passSyncFailure(const World& w, const SyncSchedule& s, size_t failed, const std::vector<int>* pes, uint64_t base,
                     uint64_t stride, uint64_t value, tether_signal_op_t op) {
  for (size_t i = failed + 1; i < s.steps.size(); ++i) {
    const SyncStep& step = s.steps[i];
    if (step.to < 0) continue;
    const int to = pes ? (*pes)[static_cast<size_t>(step.to)] : step.to;
    const SegPath& p = w.path(to, SegKind::Host);
    if (!p.ops || !(p.ops->caps & kCapLoadStore)) continue;
    (void)signalWord(w, to, SymRef{SegKind::Host, base + static_cast<uint64_t>(step.word) * stride}, value, op,
                     /*post=*/false);
  }
}

Status syncFailurePassed(const char* call, int me, int from, int word, tether_status_t code) {
  const tether_status_t c = code > TETHER_SUCCESS && code <= TETHER_ERR_TRUNCATED ? code : TETHER_ERR_PEER_LOST;
  return Status(c, strprintf("%s: PE %d, round %d: world PE %d failed this barrier (%s; its own error says why) and "
                             "passed the failure on; PE %d gives up with it instead of waiting out TETHER_TIMEOUT",
                             call, me, word, from, tether_status_string(c), me));
}

}  // namespace tether
