// PMIx launch over libpmix (pmix.h): job position from the PMIx server, rank 0's rendezvous offer through one fence.
#include <pmix.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "base/log.h"
#include "bootstrap/offer.h"
#include "bootstrap/pmix/pmix.h"

namespace tether {
namespace {

Status pmixError(const char* what, pmix_status_t rc) {
  TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "PMIx launch: %s failed: %s (%d)", what, PMIx_Error_string(rc), rc);
}

// This process's PMIx client: PMIx_Init by init(), PMIx_Finalize on destruction (PMIx counts nested inits, e.g. an
// MPI library's). There is one, made at the first tether_init under PMIx and kept until the process exits
// (pmixSession): a client that cycles PMIx_Init/PMIx_Finalize falls out of step with the server's fences -- the
// server drops a finalized client from a fence that its next incarnation still has to join, so the others pass it
// and the late one waits alone (openpmix issues 3931 and 4113). Seen here: launch_pmix_4pe's second init hung in
// PMIx_Fence on one rank in 2 of 7 runs on a loaded 2-core machine while PMIx was finalized after each init.
class PmixClient {
 public:
  bool live() const { return live_; }
  Status init() {
    pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) return pmixError("PMIx_Init (is the PMIx server that started this process alive?)", rc);
    live_ = true;
    owner_ = ::getpid();
    return Status::ok();
  }
  // Only in the process that initialised it: a child forked later inherits this object (and the connection to the
  // server), and its exit must not finalize the parent's client.
  ~PmixClient() {
    if (live_ && owner_ == ::getpid()) (void)PMIx_Finalize(nullptr, 0);
  }
  const pmix_proc_t& me() const { return me_; }
  pmix_proc_t rankProc(pmix_rank_t rank) const {
    pmix_proc_t p;
    PMIX_PROC_CONSTRUCT(&p);
    PMIX_LOAD_PROCID(&p, me_.nspace, rank);
    return p;
  }

  // An unsigned value of `key` about `proc`; *found false (and OK) when the server does not have it.
  Status getUnsigned(const pmix_proc_t& proc, const char* key, uint64_t* out, bool* found) const {
    pmix_value_t* val = nullptr;
    pmix_status_t rc = PMIx_Get(&proc, key, nullptr, 0, &val);
    *found = false;
    if (rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_NOT_SUPPORTED) return Status::ok();
    if (rc != PMIX_SUCCESS) return pmixError(key, rc);
    Status s = Status::ok();
    switch (val->type) {
      case PMIX_UINT32: *out = val->data.uint32; *found = true; break;
      case PMIX_UINT16: *out = val->data.uint16; *found = true; break;
      case PMIX_UINT64: *out = val->data.uint64; *found = true; break;
      case PMIX_UINT8: *out = val->data.uint8; *found = true; break;
      case PMIX_INT: if (val->data.integer >= 0) { *out = static_cast<uint64_t>(val->data.integer); *found = true; } break;
      default: s = Status(TETHER_ERR_BOOTSTRAP, strprintf("PMIx launch: %s has unexpected type %d", key, val->type));
    }
    PMIX_VALUE_RELEASE(val);
    return s;
  }

 private:
  pmix_proc_t me_{};
  bool live_ = false;
  pid_t owner_ = -1;
};

// The process's client, initialised at the first call and finalized when the process exits (a static's destructor).
// PMIx's client state is process-wide by nature, like the offer keys below; the mutex makes concurrent inits safe.
Status pmixSession(const PmixClient** out) {
  static std::mutex mu;
  static PmixClient client;
  std::lock_guard<std::mutex> lock(mu);
  if (!client.live()) TETHER_TRY(client.init());
  *out = &client;
  return Status::ok();
}

Status toInt(const char* key, uint64_t v, int* out) {
  if (v > 0x7fffffff) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "PMIx launch: %s=%llu is out of range", key,
                                  static_cast<unsigned long long>(v));
  *out = static_cast<int>(v);
  return Status::ok();
}

Status readPosition(const PmixClient& pmix, JobInfo* job) {
  const pmix_proc_t wild = pmix.rankProc(PMIX_RANK_WILDCARD);
  uint64_t v = 0;
  bool found = false;
  TETHER_TRY(pmix.getUnsigned(wild, PMIX_JOB_SIZE, &v, &found));
  if (!found) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "PMIx launch: the server does not give the job size (PMIX_JOB_SIZE)");
  TETHER_TRY(toInt(PMIX_JOB_SIZE, v, &job->size));
  TETHER_TRY(toInt("rank", pmix.me().rank, &job->rank));
  if (job->size < 1 || job->rank >= job->size)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "PMIx launch: rank %d outside [0, PMIX_JOB_SIZE=%d)", job->rank, job->size);
  TETHER_TRY(pmix.getUnsigned(pmix.me(), PMIX_LOCAL_RANK, &v, &found));
  if (found) TETHER_TRY(toInt(PMIX_LOCAL_RANK, v, &job->localRank));
  TETHER_TRY(pmix.getUnsigned(wild, PMIX_LOCAL_SIZE, &v, &found));
  if (found) TETHER_TRY(toInt(PMIX_LOCAL_SIZE, v, &job->localSize));
  if (job->localRank >= 0 && job->localSize >= 1 && job->localRank >= job->localSize) {
    job->localRank = job->localSize = -1;  // inconsistent: let World count PEs per host
  }
  return Status::ok();
}

// The key of this init's offer. PMIx's store is per process and a fence does not drop earlier values, so a second
// tether_init in the same process (after tether_finalize) must not read the first one's offer: every init uses a
// new key, the same on every rank as long as every rank re-initialises alike (tether_init is collective).
std::string offerKey() {
  static std::atomic<unsigned> inits{0};  // process-wide by nature, like PMIx's own store
  return "tether.offer." + std::to_string(inits.fetch_add(1));
}

Status carryOffer(const PmixClient& pmix, double timeoutSeconds, int rank, char* block) {
  const std::string key = offerKey();
  if (rank == 0) {
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = block;
    value.data.bo.size = kOfferBytes;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    if (rc != PMIX_SUCCESS) return pmixError("PMIx_Put of the rendezvous offer", rc);
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) return pmixError("PMIx_Commit", rc);
  }
  int seconds = timeoutSeconds >= 0x7fffffff ? 0x7fffffff : static_cast<int>(timeoutSeconds + 0.999);
  bool collect = true;
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
  const pmix_proc_t wild = pmix.rankProc(PMIX_RANK_WILDCARD);
  pmix_status_t rc = PMIx_Fence(&wild, 1, info, 2);
  if (rc == PMIX_ERR_TIMEOUT)
    TETHER_FAIL(TETHER_ERR_TIMEOUT, "PMIx launch: not every rank reached tether_init within %g s (TETHER_TIMEOUT)",
                timeoutSeconds);
  if (rc != PMIX_SUCCESS) return pmixError("PMIx_Fence", rc);
  if (rank == 0) return Status::ok();
  const pmix_proc_t root = pmix.rankProc(0);
  pmix_value_t* val = nullptr;
  rc = PMIx_Get(&root, key.c_str(), &info[1], 1, &val);
  if (rc != PMIX_SUCCESS) return pmixError("PMIx_Get of rank 0's rendezvous offer", rc);
  Status s = Status::ok();
  if (val->type != PMIX_BYTE_OBJECT || val->data.bo.size != kOfferBytes)
    s = Status(TETHER_ERR_BOOTSTRAP, strprintf("PMIx launch: rank 0's offer has type %d and %zu bytes, expected a "
                                               "byte object of %zu", val->type, val->data.bo.size, kOfferBytes));
  else
    std::memcpy(block, val->data.bo.bytes, kOfferBytes);
  PMIX_VALUE_RELEASE(val);
  return s;
}

}  // namespace

bool pmixBuilt() { return true; }

Status pmixJob(const Config& config, double timeoutSeconds, JobInfo* job) {
  const PmixClient* session = nullptr;
  TETHER_TRY(pmixSession(&session));
  const PmixClient& pmix = *session;
  JobInfo j;
  j.launcher = "pmix";
  TETHER_TRY(readPosition(pmix, &j));
  if (j.size > 1) {
    const int rank = j.rank;
    TETHER_TRY(exchangeOffer(config, "PMIx",
                             [&](char* block) { return carryOffer(pmix, timeoutSeconds, rank, block); }, &j));
  }
  TETHER_LOG_INFO(LogSys::Bootstrap, "job: launcher pmix (namespace %s), rank %d of %d, local %d of %d",
                  pmix.me().nspace, j.rank, j.size, j.localRank, j.localSize);
  *job = std::move(j);
  return Status::ok();
}

}  // namespace tether
