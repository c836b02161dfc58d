#include "base/config.h"

#include "base/clock.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace tether {

const std::vector<ConfigVar>& configVars() {
  // The one place where TETHER_* variables are declared. Keep README's table in sync (tether-info --config prints it).
  static const std::vector<ConfigVar> vars = {
      {"TETHER_LOG", ConfigType::String, "warn",
       "Log filter: <level>[:<subsys>,...]; levels error|warn|info|debug|trace; subsystems base, config, bootstrap, "
       "launcher, heap, transport, rma, sync, core, topology"},
      {"TETHER_TIMEOUT", ConfigType::Seconds, "300",
       "Bound on every wait (bootstrap, barrier, wait_until, signal_wait_until); on expiry the call fails naming what "
       "it waited for", 0.001, kMaxWaitSeconds},
      {"TETHER_HEAP_SIZE", ConfigType::Size, "64M",
       "Initial size of each PE's host symmetric heap: usable without a growth step, but memory is committed only as "
       "allocations reach it (at most TETHER_HEAP_MAX)",
       0, kMaxHeapBytes},
      {"TETHER_HEAP_MAX", ConfigType::Size, "8G",
       "Largest size the host symmetric heap may grow to (address space is reserved for it at init)", 0, kMaxHeapBytes},
      {"TETHER_RANK", ConfigType::Int, "-1", "This PE's rank (set by tetherrun; read when no other launcher is seen)",
       -1, kMaxInt32},
      {"TETHER_SIZE", ConfigType::Int, "-1", "Number of PEs (set by tetherrun)", -1, kMaxInt32},
      {"TETHER_LOCAL_RANK", ConfigType::Int, "-1", "Rank among the PEs of this host (set by tetherrun)", -1, kMaxInt32},
      {"TETHER_LOCAL_SIZE", ConfigType::Int, "-1", "Number of PEs on this host (set by tetherrun)", -1, kMaxInt32},
      {"TETHER_BOOTSTRAP_ADDR", ConfigType::String, "",
       "Rendezvous address host:port served by PE 0 (set by tetherrun; set it yourself under mpirun/srun; torchrun's "
       "MASTER_ADDR/MASTER_PORT are used when it is unset)"},
      {"TETHER_BOOTSTRAP_FD", ConfigType::Int, "-1",
       "Internal: listening socket inherited by PE 0 from tetherrun (avoids a port race)", -1, kMaxInt32},
      {"TETHER_JOB_SECRET", ConfigType::String, "",
       "Shared secret of the job; bootstrap connections that do not present it are refused (set by tetherrun)"},
      {"TETHER_CONTROL_FD", ConfigType::Int, "-1",
       "Internal: pipe to tetherrun inherited by every PE (shmem_global_exit reports its status there)", -1, kMaxInt32},
      {"TETHER_LAUNCHER", ConfigType::String, "",
       "Internal: set to 'tetherrun' by tetherrun so the runtime can name its launcher; leave unset"},
      {"TETHER_PATHS", ConfigType::String, "auto",
       "Peer path overrides for same-host peers: auto, or a comma list host=<auto|shm>, device=<auto|p2p|staged> "
       "(a bare shm means host=shm)"},
      {"TETHER_DT_RMA", ConfigType::String, "auto",
       "Non-contiguous put/get (tether_put_typed & co.): auto (pack/unpack straight into or out of the peer's memory "
       "where it is mapped here, else staging + contiguous put/get; typed-to-typed GPU transfers by the cost model), "
       "direct (where mapped, no cost model) or staged (always staging: tests the fallback)"},
      {"TETHER_DT_SCHEME", ConfigType::String, "auto",
       "Datatype GPU engine: force a pack scheme (thread, warp, copy2d, copy3d, elem, batch) instead of the cost "
       "model's choice; "
       "read by the datatype library at each pack"},
      {"TETHER_DT_PRELOAD", ConfigType::Bool, "1",
       "Datatype GPU engine: 1 = tether_init loads every pack kernel, makes the engine's streams and reads (or "
       "measures) the cost model's table, so that no typed call loads a kernel or calibrates (CUDA's lazy loading may "
       "synchronise the context: a hang where a stream or kernel of this PE waits for that call's caller); 0 = at "
       "first use (less start-up time and GPU memory; safe only where no typed transfer starts while a wait of this "
       "PE is pending)"},
      {"TETHER_DT_CALIBRATION", ConfigType::String, "",
       "Datatype GPU engine: folder of the cost model's calibration files (default $XDG_CACHE_HOME/tether or "
       "~/.cache/tether)"},
      {"TETHER_GPU", ConfigType::String, "auto",
       "GPU of this PE: auto (node-local PE modulo visible GPUs; none if no GPU is visible), an ordinal (init fails "
       "where no GPU can serve it), or none (host segments only)"},
      {"TETHER_DEFAULT_SEGMENT", ConfigType::String, "auto",
       "Segment kind of tether_malloc & co.: auto (DEVICE when this PE has a GPU, else HOST), host or device"},
      {"TETHER_DEVICE_HEAP_SIZE", ConfigType::Size, "256M", "Initial size of each PE's DEVICE (GPU memory) heap",
       0, kMaxHeapBytes},
      {"TETHER_DEVICE_HEAP_MAX", ConfigType::Size, "32G",
       "Largest size the DEVICE heap may grow to (GPU address space is reserved for it at init)", 0, kMaxHeapBytes},
      {"TETHER_DEVICE_IPC", ConfigType::Bool, "0",
       "1: share DEVICE segments with legacy CUDA IPC (fixed size) instead of VMM + POSIX file descriptors"},
      {"TETHER_COPY_STREAMS", ConfigType::Int, "4", "Internal copy-engine streams of the host path", 1, 64},
      {"TETHER_COLL_CROWDED", ConfigType::String, "auto",
       "Host collectives on one host: 1 = stage larger contributions and eager broadcasts (up to 32 KiB) so calls "
       "need one wait, as where PEs outnumber cores; 0 = pull and close with a barrier above 2 KiB (4 KiB eager); "
       "auto = 1 when the host runs more PEs than online CPUs. Must be the same on every PE of a host"},
      {"TETHER_COLL_EAGER_ALLTOALL", ConfigType::Bool, "1",
       "1: tether_team_alltoall_eager (what shmem_alltoall calls) stores each member's blocks straight into the others' "
       "dest before the agreement (one wait; OpenSHMEM's precondition: every member's dest ready before any member "
       "calls, so calls on one dest back to back need a sync between them); 0: it runs as tether_team_alltoall, safe "
       "back to back without a sync. Must be the same on every PE (a difference is reported as a mismatch)"},
      {"TETHER_COLL_GPU", ConfigType::Bool, "1",
       "1: host team collectives on DEVICE objects (not broadcast, alltoallv) run on this PE's GPU, as the stream "
       "form's kernel on an internal stream (after the host agreement), where every member is load/store reachable; "
       "0: the CPU pulls and combines. Must be the same on every PE (a difference is reported as a mismatch)"},
      {"TETHER_COLL_TWO_SHOT", ConfigType::Size, "256K",
       "GPU allreduce (stream and host forms, 3+ members): reduce-scatter + allgather from this many bytes, "
       "one-shot below", 0, kMaxHeapBytes},
      {"TETHER_BARRIER_FLAT_MAX", ConfigType::Int, "8",
       "device, stream and team barriers of up to this many PEs take one round (every PE signals every other, then "
       "waits for all); larger ones take log2(n) dissemination rounds (1: always dissemination)", 1, 16},
      {"TETHER_STREAM_BARRIER", ConfigType::String, "auto",
       "Stream barriers (tether_barrier_all_on_stream, tether_sync_all_on_stream, barriers in prepared sets): auto = "
       "stream memory operations whose epochs are chosen at the call, except on a stream being captured into a CUDA "
       "graph (where those epochs would repeat): there, where some GPU is used by two or more PEs, memory operations "
       "with fixed values on two word sets, each word zeroed after its wait (every replay synchronises again; twice "
       "the rounds), else the world team's sync kernel (tether_team_sync_on_stream on the world team: its epoch lives "
       "in GPU memory); kernel = always that kernel; reset = always the memory operations with resets. Must be the "
       "same on every PE, as must which barriers are captured"},
      {"TETHER_SYNC_BY_HOST", ConfigType::String, "auto",
       "Host barriers of PEs on several hosts (tether_barrier_all, team syncs, the host collectives' agreement and "
       "closing rounds): 1 = each host's PEs meet first and one PE per host takes the rounds between hosts "
       "(log2(hosts) rounds over the network); 0 = one dissemination over all PEs; auto = 1 (with GPUs too since "
       "2026-12-05). Must be the same on every PE"},
      {"TETHER_COLL_BY_HOST", ConfigType::Bool, "1",
       "Host allreduces, allgathers, broadcasts and rooted reduces of 2-32 KiB (OpenSHMEM reductions, fcollect, "
       "broadcast) of HOST objects on "
       "teams whose PEs span hosts with 2+ PEs on some host (allgather: each host's PEs consecutive in the team, as "
       "many on every host; broadcast over 2 KiB: the root its host's first PE in the team): 1 = each host's PEs "
       "combine or gather at its first PE, those PEs exchange among themselves, each broadcasts on its host (a "
       "broadcast: from the root to one PE per host, then on each host; two more team indices per such team, made "
       "at its first such call; the stream allreduce, allgather and broadcast alike, and the device broadcast "
       "where each host's PEs form a run in the team); 0 = every PE pulls from every "
       "other. Must be the same on every PE (a difference is reported as a mismatch)"},
      {"TETHER_COLL_BLOCKS", ConfigType::Int, "0",
       "GPU collectives: the most blocks of 512 threads one collective uses (1: always one block; 0: as many as the "
       "GPU holds resident at once, one per multiprocessor)", 0, 4096},
      {"TETHER_COLL_BLOCK_BYTES", ConfigType::Size, "64K",
       "GPU collectives: one block per this many bytes of the result (up to TETHER_COLL_BLOCKS)", 1, kMaxHeapBytes},
      {"TETHER_COLL_SCRATCH", ConfigType::Size, "16K",
       "Device and stream reductions on teams with members they cannot load (another host, TETHER_FORCE_PROXY): "
       "the bytes of each pull of such a member's elements into this PE's scratch through the proxy ring (a multiple "
       "of 16; at most the 16 KiB reserved per team)", 16, 16 * 1024},
      {"TETHER_HOST_SERVICE", ConfigType::String, "auto",
       "Host atomics and signals on GPU words: 1 = executed by a resident kernel answering a mailbox "
       "(started at first use, gone after TETHER_HOST_SERVICE_IDLE without requests); 0 = one kernel launch each; "
       "auto = 1 unless another PE of the host shares this PE's GPU"},
      {"TETHER_HOST_SERVICE_IDLE", ConfigType::Seconds, "100us",
       "How long the host service kernel waits for the next request before it returns its SM (a "
       "cudaDeviceSynchronize of the program waits at most this long for it)", 1e-6, 10},
      {"TETHER_HOST_SERVICE_POLLERS", ConfigType::Int, "2",
       "Warps of the host service kernel polling its request ring in turn (their reads of host memory spread over "
       "one poll); on one H100 a blocking 8 B put took 3.5-3.8 us with 2 against 3.8-4.3 with 1, and 3 or more "
       "were slower (bench/results/h100/service_pollers_2026-12-06.txt)", 1, 32},
      {"TETHER_COPY_SPLIT", ConfigType::Size, "0",
       "Host-path copies of at least this many bytes are split across the internal streams; 0 = never (on 2xH200 "
       "NV18 splitting lowered peer bandwidth at every size: bench/results/h200x2/host_paths.txt)", 0, kMaxHeapBytes},
      {"TETHER_FORCE_PROXY", ConfigType::Bool, "0",
       "1: device handles (tether_device_handle, tether_device_handle_cpu) reach every PE but their own through the "
       "proxy ring and thread instead of loads/stores (tests the remote-peer path on one host)"},
      {"TETHER_UCX_PROGRESS_US", ConfigType::Int, "1000",
       "Period in microseconds of the UCX progress thread, which moves remote puts and atomics targeting this PE on "
       "while it computes without calling tether (over TCP they land only when the target's worker progresses; "
       "while tether calls progress the worker it looks less often, up to every 16 periods or 16 ms); "
       "0 = no thread (waits, barriers and the proxy still progress). Only in jobs that use the network path",
       0, 1000000},
      {"TETHER_UCX_WAKEUP", ConfigType::Bool, "1",
       "UCX provider: idle threads that progress the worker (the progress thread, the idle device-API proxy) wait on "
       "its event file descriptor (UCP_FEATURE_WAKEUP), so traffic to a PE that computes outside tether is served "
       "when it arrives instead of at the next period; 0 = poll every period (small remote messages were ~1 us faster "
       "so on a 16-core H200 machine, level on a 2-core VM)"},
      {"TETHER_UCX_AMO", ConfigType::String, "owner",
       "UCX provider: who executes atomics and signals on HOST/STATIC words of network peers: owner (an active "
       "message the owning PE applies with its local atomics, so they are atomic against same-host PEs' CPU atomics; "
       "DEVICE words always go this way) or native (UCX's own atomics: only when every atomic on a word arrives "
       "through UCX; UCX 1.22 over TCP with peer error handling has none)"},
      {"TETHER_PROXY_SLOTS", ConfigType::Int, "1024",
       "Descriptors in each device-API proxy ring (a power of two, 2..1048576); a producer waits while the ring is "
       "full", 2, 1048576},
      {"TETHER_MSG_EAGER", ConfigType::Size, "8K",
       "Two-sided messaging (tether/msg.h): the largest message sent eagerly, in one ring slot (longer ones use "
       "rendezvous); also the fragment size of rendezvous data", 1, 1024.0 * 1024 * 1024},
      {"TETHER_MSG_SLOTS", ConfigType::Int, "16",
       "Two-sided messaging: ring slots from each PE to each PE (a sender waits while its ring to a PE is full)", 2,
       65536},
      {"TETHER_MSG_UNEXPECTED", ConfigType::Size, "4M",
       "Two-sided messaging: bytes of each PE's pool for eager messages that arrive before their receive; beyond it "
       "they are kept in private host memory", 0, 1024.0 * 1024 * 1024 * 1024},
      {"TETHER_MSG_DIRECT", ConfigType::Bool, "1",
       "Two-sided messaging: a rendezvous message between PEs of one host is read by the receiver straight from the "
       "send buffer (symmetric heap: one get; private host memory: process_vm_readv) instead of crossing the ring in "
       "fragments; 0 = always through the ring"},
      {"TETHER_MSG_IPC", ConfigType::Bool, "1",
       "Two-sided messaging, with TETHER_MSG_DIRECT: a rendezvous message from a private GPU buffer (cudaMalloc, not "
       "symmetric) is read by the receiver straight from the send buffer, opened by CUDA IPC (a self-send: copied "
       "from the buffer itself); 0 = such messages cross the ring in fragments"},
      {"TETHER_MSG_REMOTE_EAGER", ConfigType::Size, "64K",
       "Two-sided messaging: to a PE on another host (one flagged put per slot message), messages up to this many "
       "bytes go eagerly in consecutive ring slots as ONE network message instead of by rendezvous (three network "
       "legs), and rendezvous data through the ring in fragments of up to this size or 32 KiB; at most what one "
       "flagged put carries (128 KiB with the slot head) and half a ring; below TETHER_MSG_EAGER it changes nothing",
       0, 1024.0 * 1024 * 1024},
      {"TETHER_MSG_REMOTE_RNDV", ConfigType::Size, "1",
       "Two-sided messaging: a rendezvous message of at least this many bytes between host buffers of PEs on "
       "different hosts moves by the network transport's own protocol straight into the posted buffer (UCX: one "
       "active message, eager or rendezvous as UCX picks) instead of in ring fragments; 0 = always the ring",
       0, 1024.0 * 1024 * 1024 * 1024},
      {"TETHER_MSG_REMOTE_INFLIGHT", ConfigType::Size, "1M",
       "Two-sided messaging, with TETHER_MSG_REMOTE_RNDV: bytes of such transfers under way from a PE to one other PE "
       "at a time (one larger message still goes, alone); the next start as earlier ones complete. Over UCX on TCP "
       "many rendezvous at once move slower than a few in a row "
       "(bench/results/cpu-2core-vm/msg_remote_inflight_ab.txt)",
       1, 1024.0 * 1024 * 1024 * 1024},
      {"TETHER_MSG_PINNED_MAX", ConfigType::Size, "64M",
       "Two-sided messaging: the most bytes of pinned host memory a PE keeps for staging GPU send buffers to other "
       "hosts (reused from message to message, kept until finalize); a message for which no idle stage fits and a new "
       "one would exceed it is staged in pageable memory (slower); 0 = always pageable",
       0, 1024.0 * 1024 * 1024 * 1024},
      {"TETHER_MSG_REMOTE_PIECE", ConfigType::Size, "8M",
       "Two-sided messaging: a GPU send buffer to another host for which no whole pinned stage fits "
       "TETHER_MSG_PINNED_MAX goes in pieces of this size through two pinned stages of a piece (one piece on the wire "
       "while the next is copied) instead of whole through pageable memory; 0 = never", 0, 1024.0 * 1024 * 1024 * 1024},
      {"TETHER_MSG_REMOTE_PIECE_HOST", ConfigType::Bool, "0",
       "Two-sided messaging: host send buffers over TETHER_MSG_REMOTE_PIECE that the transport moves go in pieces "
       "too (no copy; for tests of the piece protocol without a GPU)"},
      {"TETHER_WAIT_SLOW_YIELD", ConfigType::Seconds, "500us",
       "A host wait yields its core while it waits (for a PE that shares the core) until four yields in a row keep "
       "the core away longer than this -- a CPU-bound process outside the job took it -- and then sleeps; 0 = never "
       "(yield for 4096 calls). Read from the environment once per process, like TETHER_LOG",
       0, 1},
      {"TETHER_WAIT_FUTEX", ConfigType::Bool, "0",
       "1 = host waits on words that PEs of this host store (barriers, team syncs, collectives' tokens, messaging, "
       "wait_until) sleep on a futex that the storing PE wakes, so a sleeping waiter wakes at once instead of after "
       "its 20 us sleep. Off by default: on the 2-core VM it made 8 PEs' small broadcasts ~20 % slower (a wake "
       "of a sleeper is a system call on the storing PE's path) and gained little beside outside CPU hogs once slow "
       "yields end the yielding (bench/results/cpu-2core-vm/wait_slow_yield_2026-12-07.txt)"},
      {"TETHER_WAIT_REPORT", ConfigType::Seconds, "10",
       "A wait that lasts longer (bootstrap rendezvous and collectives, barrier, wait_until) logs a note this often "
       "naming what it waits for and the time left; 0 = never. Read from the environment, like TETHER_LOG",
       0, kMaxWaitSeconds},
      {"TETHER_KILL_GRACE", ConfigType::Seconds, "3",
       "tetherrun: seconds between SIGTERM and SIGKILL when stopping the remaining PEs", 0, 3600},
  };
  return vars;
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

bool parseInt(const std::string& in, int64_t* out) {
  std::string s = trim(in);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parseSize(const std::string& in, uint64_t* out) {
  std::string s = trim(in);
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str()) return false;
  std::string suffix = end;
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 2 && (suffix[1] == 'i')) suffix.pop_back();  // KiB, MiB...
  unsigned shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parseSeconds(const std::string& in, double* out) {
  std::string s = trim(in);
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0) return false;
  std::string suffix = end;
  if (suffix == "ms") v /= 1e3;
  else if (suffix == "us") v /= 1e6;
  else if (suffix == "m" || suffix == "min") v *= 60;
  else if (!suffix.empty() && suffix != "s") return false;
  *out = v;
  return true;
}

bool parseBool(const std::string& in, bool* out) {
  std::string s = trim(in);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return *out = true, true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return *out = false, true;
  return false;
}

Config Config::fromEnvironment() {
  Config c;
  for (const auto& v : configVars()) {
    const char* e = std::getenv(v.name);
    if (e) c.values_[v.name] = e;
  }
  for (char** p = environ; p && *p; ++p) {
    if (std::strncmp(*p, "TETHER_", 7) != 0) continue;
    // TETHER_TEST_* belong to tether's test programs (seeds, tree counts): not the library's, and no typo.
    if (std::strncmp(*p, "TETHER_TEST_", 12) == 0) continue;
    std::string name(*p, std::strcspn(*p, "="));
    bool known = false;
    for (const auto& v : configVars()) known = known || name == v.name;
    if (!known) c.unknownInEnv_.push_back(name);
  }
  return c;
}

void Config::set(const std::string& name, const std::string& value) {
  (void)var(name);
  values_[name] = value;
}

const ConfigVar& Config::var(const std::string& name) const {
  for (const auto& v : configVars())
    if (name == v.name) return v;
  std::fprintf(stderr, "tether: internal error: config variable %s is not declared\n", name.c_str());
  std::abort();
}

bool Config::isSet(const std::string& name) const {
  (void)var(name);
  return values_.count(name) != 0;
}

std::string Config::raw(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() ? it->second : var(name).defaultValue;
}

namespace {

// A byte count as the shortest exact K/M/G/T text ("64T", "1536K", "4095").
std::string sizeText(double bytes) {
  static const char* const kUnits[] = {"T", "G", "M", "K"};
  for (int i = 0; i < 4; ++i) {
    const double unit = std::ldexp(1.0, 10 * (4 - i));
    if (bytes >= unit && std::fmod(bytes, unit) == 0) return strprintf("%.0f%s", bytes / unit, kUnits[i]);
  }
  return strprintf("%.0f", bytes);
}

std::string rangeText(const ConfigVar& v) {
  switch (v.type) {
    case ConfigType::Size: return sizeText(v.min) + " to " + sizeText(v.max) + " bytes";
    case ConfigType::Seconds: return strprintf("%g to %g seconds", v.min, v.max);
    default: return strprintf("%.0f to %.0f", v.min, v.max);
  }
}

// Parses r as v's type; *value gets it as a double for the range check (Size and Int values past 2^53 round, which
// cannot move them across a bound below 2^53). *expect names the type for the error.
bool parseAs(const ConfigVar& v, const std::string& r, double* value, const char** expect) {
  switch (v.type) {
    case ConfigType::String: return true;
    case ConfigType::Int: { int64_t x; *expect = "an integer"; return parseInt(r, &x) && (*value = double(x), true); }
    case ConfigType::Size: {
      uint64_t x;
      *expect = "a size (e.g. 4096, 64M, 2G)";
      return parseSize(r, &x) && (*value = double(x), true);
    }
    case ConfigType::Seconds: { *expect = "a duration (e.g. 30, 500ms, 2m)"; return parseSeconds(r, value); }
    case ConfigType::Bool: { bool x; *expect = "a boolean (1/0, true/false)"; return parseBool(r, &x); }
  }
  return false;
}

}  // namespace

Status Config::validate(std::vector<std::string>* unknown) const {
  if (unknown) *unknown = unknownInEnv_;
  for (const auto& v : configVars()) {
    std::string r = raw(v.name);
    double value = 0;
    const char* expect = "";
    if (!parseAs(v, r, &value, &expect))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s='%s': not %s", v.name, r.c_str(), expect);
    const bool ranged = v.type == ConfigType::Int || v.type == ConfigType::Size || v.type == ConfigType::Seconds;
    if (ranged && !(value >= v.min && value <= v.max))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s='%s' is out of range: allowed %s", v.name, r.c_str(),
                  rangeText(v).c_str());
  }
  // An initial heap size larger than its limit cannot be honoured: say so rather than clamp (a defaulted initial
  // size is lowered to the limit by the heap's owner).
  for (const char* prefix : {"TETHER_HEAP", "TETHER_DEVICE_HEAP"}) {
    const std::string sizeName = std::string(prefix) + "_SIZE", maxName = std::string(prefix) + "_MAX";
    if (isSet(sizeName) && size(sizeName) > size(maxName))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                  "%s='%s' is larger than %s='%s'%s, the most that heap may grow to: lower %s or raise %s (memory is "
                  "committed as the heap is used, so a large %s costs nothing until then)",
                  sizeName.c_str(), raw(sizeName).c_str(), maxName.c_str(), raw(maxName).c_str(),
                  isSet(maxName) ? "" : " (its default)", sizeName.c_str(), maxName.c_str(), maxName.c_str());
  }
  return Status::ok();
}

std::string Config::str(const std::string& name) const { return raw(name); }

int64_t Config::integer(const std::string& name) const {
  int64_t v = 0;
  if (!parseInt(raw(name), &v)) parseInt(var(name).defaultValue, &v);
  return v;
}

uint64_t Config::size(const std::string& name) const {
  uint64_t v = 0;
  if (!parseSize(raw(name), &v)) parseSize(var(name).defaultValue, &v);
  return v;
}

double Config::seconds(const std::string& name) const {
  double v = 0;
  if (!parseSeconds(raw(name), &v)) parseSeconds(var(name).defaultValue, &v);
  return v;
}

bool Config::flag(const std::string& name) const {
  bool v = false;
  if (!parseBool(raw(name), &v)) parseBool(var(name).defaultValue, &v);
  return v;
}

namespace {
// A duration variable read straight from the environment, by waits that have no Config at hand: unset, empty or
// malformed means fallback (Config::validate() has reported a malformed value at init).
double envSeconds(const char* name, double fallback) {
  double v = fallback;
  const char* e = std::getenv(name);
  if (e && *e && !parseSeconds(e, &v)) v = fallback;
  return v;
}
}  // namespace

uint64_t slowYieldNs() {
  static const uint64_t ns = [] {  // once per process (first asked at a wait's 4th yield)
    const double v = envSeconds("TETHER_WAIT_SLOW_YIELD", 500e-6);
    return v > 0 ? static_cast<uint64_t>(v * 1e9) : UINT64_MAX;
  }();
  return ns;
}

double waitReportSeconds() { return envSeconds("TETHER_WAIT_REPORT", 10); }

}  // namespace tether
