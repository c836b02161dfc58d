// Topology record: text form, pure path choice, discovery of this PE and of same-host GPU pairs.
#include "topology/topology.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <sstream>

#include "base/config.h"
#include "base/log.h"
#include "topology/pci.h"

namespace tether {

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::None: return "none";
    case LinkType::Pcie: return "pcie";
    case LinkType::NvLink: return "nvlink";
    case LinkType::SameGpu: return "same_gpu";
  }
  return "?";
}

const char* pathKindName(PathKind k) {
  switch (k) {
    case PathKind::Self: return "self";
    case PathKind::Shm: return "shm";
    case PathKind::P2p: return "p2p";
    case PathKind::Staged: return "staged";
    case PathKind::Proxy: return "proxy";
    case PathKind::None: return "none";
    case PathKind::Net: return "net";
  }
  return "?";
}

std::string canonicalPciBusId(const std::string& busId) {
  std::string s;
  s.reserve(busId.size());
  for (char c : busId) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  size_t first = s.find(':');
  if (first == std::string::npos) return s;
  size_t second = s.find(':', first + 1);
  if (second == std::string::npos) return "0000:" + s;  // "bb:dd.f": domain 0
  std::string domain = s.substr(0, first);
  while (domain.size() > 4 && domain[0] == '0') domain.erase(0, 1);
  while (domain.size() < 4) domain.insert(0, "0");
  return domain + s.substr(first);
}

// ---- text form ---------------------------------------------------------------------------------------------------

namespace {

bool isDefault(const PairRecord& p) {
  return !p.p2pAccess && !p.nativeAtomics && p.link == LinkType::None && p.nvlinkCount == 0;
}

// A value is written bare when it cannot be mistaken for syntax, else quoted with \" and \\ escapes.
std::string quoteIfNeeded(const std::string& v) {
  bool bare = !v.empty();
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\\' || c == '#' || c == '=') bare = false;
  }
  if (bare) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// Splits one line into whitespace-separated tokens; a '"' opens a quoted run (escapes \" and \\) that may hold
// spaces and '#'; an unquoted '#' ends the line. Quotes are removed from the token text.
Status tokenize(const std::string& line, std::vector<std::string>* tokens) {
  tokens->clear();
  std::string cur;
  bool inToken = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '#') break;
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (inToken) tokens->push_back(cur);
      cur.clear();
      inToken = false;
      continue;
    }
    inToken = true;
    if (c != '"') {
      cur.push_back(c);
      continue;
    }
    bool closed = false;
    for (++i; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        cur.push_back(line[++i]);
      } else if (line[i] == '"') {
        closed = true;
        break;
      } else {
        cur.push_back(line[i]);
      }
    }
    if (!closed) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "unterminated quoted value");
  }
  if (inToken) tokens->push_back(cur);
  return Status::ok();
}

Status toInt(const std::string& key, const std::string& v, int lo, int* out) {
  int64_t x = 0;
  if (!parseInt(v, &x) || x < lo || x > (1 << 30))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s='%s' is not an integer >= %d", key.c_str(), v.c_str(), lo);
  *out = static_cast<int>(x);
  return Status::ok();
}

Status toBool(const std::string& key, const std::string& v, bool* out) {
  if (v == "1") return *out = true, Status::ok();
  if (v == "0") return *out = false, Status::ok();
  TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s='%s' is not 0 or 1", key.c_str(), v.c_str());
}

Status toLink(const std::string& v, LinkType* out) {
  for (LinkType t : {LinkType::None, LinkType::Pcie, LinkType::NvLink, LinkType::SameGpu}) {
    if (v == linkTypeName(t)) return *out = t, Status::ok();
  }
  TETHER_FAIL(TETHER_ERR_INVALID_ARG, "link='%s' is not one of none, pcie, nvlink, same_gpu", v.c_str());
}

// Splits "key=value"; the key must be non-empty.
Status splitKeyValue(const std::string& tok, std::string* key, std::string* value) {
  size_t eq = tok.find('=');
  if (eq == std::string::npos || eq == 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "'%s' is not key=value", tok.c_str());
  *key = tok.substr(0, eq);
  *value = tok.substr(eq + 1);
  return Status::ok();
}

Status parsePeLine(const std::vector<std::string>& tok, int* index, PeRecord* pe) {
  if (tok.size() < 2) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "expected 'pe <index> key=value...'");
  TETHER_TRY(toInt("pe index", tok[1], 0, index));
  for (size_t i = 2; i < tok.size(); ++i) {
    std::string k, v;
    TETHER_TRY(splitKeyValue(tok[i], &k, &v));
    if (k == "host") {
      pe->host = v;
    } else if (k == "local") {
      TETHER_TRY(toInt(k, v, 0, &pe->localIndex));
    } else if (k == "numa") {
      TETHER_TRY(toInt(k, v, -1, &pe->cpuNumaNode));
    } else if (k == "gpu") {
      TETHER_TRY(toBool(k, v, &pe->gpu.present));
    } else if (k == "dev") {
      TETHER_TRY(toInt(k, v, -1, &pe->gpu.device));
    } else if (k == "bus") {
      pe->gpu.busId = v;
    } else if (k == "name") {
      pe->gpu.name = v;
    } else if (k == "gpu_numa") {
      TETHER_TRY(toInt(k, v, -1, &pe->gpu.numaNode));
    } else if (k == "vmm") {
      TETHER_TRY(toBool(k, v, &pe->gpu.vmm));
    }  // unknown keys: written by a newer version, ignored
  }
  return Status::ok();
}

Status parsePairLine(const std::vector<std::string>& tok, int* i, int* j, PairRecord* p) {
  if (tok.size() < 3) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "expected 'pair <i> <j> key=value...'");
  TETHER_TRY(toInt("pair first index", tok[1], 0, i));
  TETHER_TRY(toInt("pair second index", tok[2], 0, j));
  for (size_t t = 3; t < tok.size(); ++t) {
    std::string k, v;
    TETHER_TRY(splitKeyValue(tok[t], &k, &v));
    if (k == "p2p") {
      TETHER_TRY(toBool(k, v, &p->p2pAccess));
    } else if (k == "atomics") {
      TETHER_TRY(toBool(k, v, &p->nativeAtomics));
    } else if (k == "link") {
      TETHER_TRY(toLink(v, &p->link));
    } else if (k == "nvlinks") {
      TETHER_TRY(toInt(k, v, 0, &p->nvlinkCount));
    }
  }
  return Status::ok();
}

}  // namespace

bool Topology::someGpuShared() const {
  std::set<std::pair<std::string, std::string>> gpus;  // (host, bus id) of each PE's GPU
  for (const PeRecord& p : pes)
    if (p.gpu.present && !gpus.insert({p.host, p.gpu.busId}).second) return true;
  return false;
}

std::string Topology::serialize() const {
  std::ostringstream o;
  o << "# tether topology: " << pes.size() << " PEs\n";
  for (size_t i = 0; i < pes.size(); ++i) {
    const PeRecord& p = pes[i];
    o << "pe " << i << " host=" << quoteIfNeeded(p.host) << " local=" << p.localIndex << " numa=" << p.cpuNumaNode
      << " gpu=" << (p.gpu.present ? 1 : 0) << " dev=" << p.gpu.device << " bus=" << quoteIfNeeded(p.gpu.busId)
      << " name=" << quoteIfNeeded(p.gpu.name) << " gpu_numa=" << p.gpu.numaNode << " vmm=" << (p.gpu.vmm ? 1 : 0)
      << "\n";
  }
  // Only records that differ from the default are written; parse fills the rest with defaults.
  const size_t n = pes.size();
  for (size_t k = 0; k < pairs.size() && k < n * n; ++k) {
    const PairRecord& r = pairs[k];
    if (isDefault(r)) continue;
    o << "pair " << k / n << " " << k % n << " p2p=" << (r.p2pAccess ? 1 : 0) << " atomics=" << (r.nativeAtomics ? 1 : 0)
      << " link=" << linkTypeName(r.link) << " nvlinks=" << r.nvlinkCount << "\n";
  }
  return o.str();
}

Status Topology::parse(const std::string& text, Topology* out) {
  std::map<int, PeRecord> pes;
  std::map<int, int> peLine;
  struct PendingPair {
    int line, i, j;
    PairRecord rec;
  };
  std::vector<PendingPair> pending;

  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  std::vector<std::string> tok;
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Status s = tokenize(line, &tok);
    if (s.isOk() && tok.empty()) continue;
    if (s.isOk()) {
      if (tok[0] == "pe") {
        int index = 0;
        PeRecord rec;
        s = parsePeLine(tok, &index, &rec);
        if (s.isOk() && pes.count(index)) {
          s = Status(TETHER_ERR_INVALID_ARG,
                     strprintf("pe %d is already described on line %d", index, peLine[index]));
        }
        if (s.isOk()) {
          pes[index] = rec;
          peLine[index] = lineNo;
        }
      } else if (tok[0] == "pair") {
        PendingPair p{lineNo, 0, 0, PairRecord()};
        s = parsePairLine(tok, &p.i, &p.j, &p.rec);
        if (s.isOk()) pending.push_back(p);
      } else {
        s = Status(TETHER_ERR_INVALID_ARG, strprintf("unknown record '%s' (expected pe or pair)", tok[0].c_str()));
      }
    }
    if (!s.isOk()) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "topology line %d: %s: '%s'", lineNo, s.message().c_str(), line.c_str());
  }

  Topology t;
  const int n = static_cast<int>(pes.size());
  for (const auto& kv : pes) {
    if (kv.first >= n) {
      int missing = 0;
      while (pes.count(missing)) ++missing;
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "topology line %d: pe %d given but pe %d is missing (PEs must be 0..N-1)",
                  peLine[kv.first], kv.first, missing);
    }
    t.pes.push_back(kv.second);
  }
  t.pairs.assign(static_cast<size_t>(n) * static_cast<size_t>(n), PairRecord());
  for (const PendingPair& p : pending) {
    if (p.i >= n || p.j >= n)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "topology line %d: pair %d %d names a PE outside 0..%d", p.line, p.i, p.j,
                  n - 1);
    t.pairs[static_cast<size_t>(p.i * n + p.j)] = p.rec;
  }
  *out = std::move(t);
  return Status::ok();
}

// ---- overrides and path choice -----------------------------------------------------------------------------------

namespace {

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

Status PathOverrides::parse(const std::string& spec, PathOverrides* out) {
  PathOverrides ov;
  std::string rest = spec;
  while (true) {
    size_t comma = rest.find(',');
    std::string tok = trimmed(rest.substr(0, comma));
    if (tok == "shm") tok = "host=shm";  // older spelling of TETHER_PATHS
    if (!tok.empty() && tok != "auto") {
      size_t eq = tok.find('=');
      std::string kind = eq == std::string::npos ? tok : trimmed(tok.substr(0, eq));
      std::string path = eq == std::string::npos ? "" : trimmed(tok.substr(eq + 1));
      if (kind == "host" && (path == "auto" || path == "shm" || path == "ucx")) {
        ov.host = path;
      } else if (kind == "device" && (path == "auto" || path == "p2p" || path == "staged")) {
        ov.device = path;
      } else {
        TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                    "TETHER_PATHS='%s': bad token '%s' (expected auto, or a comma list of host=<auto|shm|ucx> and "
                    "device=<auto|p2p|staged>)",
                    spec.c_str(), tok.c_str());
      }
    }
    if (comma == std::string::npos) break;
    rest = rest.substr(comma + 1);
  }
  *out = ov;
  return Status::ok();
}

namespace {

// "NVLink x18", "PCIe", ... : how two GPUs with peer access are joined.
std::string linkPhrase(const PairRecord& p) {
  switch (p.link) {
    case LinkType::NvLink:
      return p.nvlinkCount > 0 ? strprintf("NVLink x%d", p.nvlinkCount) : std::string("NVLink");
    case LinkType::Pcie: return "PCIe";
    case LinkType::SameGpu: return "one shared GPU";
    case LinkType::None: break;
  }
  return "peer access (link type unknown)";
}

}  // namespace

const char* segKindName(SegKind k) {
  switch (k) {
    case SegKind::Host: return "HOST";
    case SegKind::Device: return "DEVICE";
    case SegKind::Static: return "STATIC";
  }
  return "?";
}

Status choosePath(const Topology& topo, int me, int pe, SegKind kind, const PathOverrides& ov, PathChoice* out) {
  const int n = topo.size();
  if (me < 0 || me >= n || pe < 0 || pe >= n)
    TETHER_FAIL(TETHER_ERR_INVALID_PE, "choosePath: PE pair %d -> %d outside the topology's %d PEs", me, pe, n);
  const PeRecord& a = topo.pes[static_cast<size_t>(me)];
  const PeRecord& b = topo.pes[static_cast<size_t>(pe)];
  if (me == pe) {
    *out = {PathKind::Self, "same PE"};
    return Status::ok();
  }
  if (!topo.sameHost(me, pe)) {
    // Overrides apply to same-host peers only.
    if (isHostMemory(kind))
      *out = {PathKind::Net, strprintf("PE %d runs on another host (%s): network", pe, b.host.c_str())};
    else
      *out = {PathKind::None, strprintf("PE %d runs on another host (%s): DEVICE segments across hosts need a "
                                        "CUDA-aware network transport (not supported yet)", pe, b.host.c_str())};
    return Status::ok();
  }
  if (isHostMemory(kind) && ov.host == "ucx") {
    *out = {PathKind::Net, "same host, forced onto the network path by TETHER_PATHS host=ucx"};
    return Status::ok();
  }
  if (isHostMemory(kind)) {
    *out = {PathKind::Shm, ov.host == "shm" ? "same host, forced by TETHER_PATHS host=shm"
                                            : "same host: host segments are mapped by both PEs"};
    return Status::ok();
  }

  // DEVICE segments on the same host.
  if (!a.gpu.present || !b.gpu.present) {
    int without = a.gpu.present ? pe : me;
    *out = {PathKind::None, strprintf("no DEVICE segment: PE %d has no GPU", without)};
    return Status::ok();
  }
  if (topo.pairs.size() != static_cast<size_t>(n) * static_cast<size_t>(n))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "choosePath: the topology has %zu pair records for %d PEs (discoverPairs not run?)",
                topo.pairs.size(), n);
  const PairRecord& p = topo.pair(me, pe);
  const std::string& busA = a.gpu.busId;
  const std::string& busB = b.gpu.busId;
  const std::string gpus =
      p.link == LinkType::SameGpu ? "both PEs on GPU " + busA + " (same device)" : "GPUs " + busA + " -> " + busB;

  if (!p.p2pAccess) {
    if (ov.device == "p2p")
      TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                  "TETHER_PATHS device=p2p is impossible from PE %d to PE %d: no peer access between GPUs %s -> %s "
                  "(use device=auto or device=staged)",
                  me, pe, busA.c_str(), busB.c_str());
    *out = {PathKind::Staged,
            strprintf("same host, no peer access between GPUs %s -> %s: staging through host memory%s", busA.c_str(),
                      busB.c_str(), ov.device == "staged" ? " (TETHER_PATHS device=staged)" : "")};
    return Status::ok();
  }
  if (ov.device == "staged") {
    *out = {PathKind::Staged, strprintf("same host, %s: staging through host memory, forced by TETHER_PATHS "
                                        "device=staged (peer access via %s not used)",
                                        gpus.c_str(), linkPhrase(p).c_str())};
    return Status::ok();
  }
  std::string reason = "same host, " + gpus;
  if (p.link != LinkType::SameGpu) reason += " joined by " + linkPhrase(p);
  reason += p.nativeAtomics ? ", native atomics" : ", no native peer atomics";
  if (ov.device == "p2p") reason += ", forced by TETHER_PATHS device=p2p";
  *out = {PathKind::P2p, reason};
  return Status::ok();
}

// ---- discovery ---------------------------------------------------------------------------------------------------

Status hostIdentity(std::string* out) {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return errnoStatus("gethostname", errno);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  boot = trimmed(boot);
  *out = boot.empty() ? std::string(name) : std::string(name) + "/" + boot;
  return Status::ok();
}

namespace {

// NUMA node of the CPU this thread runs on now, -1 when unknown.
int currentCpuNumaNode() {
  unsigned cpu = 0, node = 0;
  if (syscall(SYS_getcpu, &cpu, &node, nullptr) == 0) return static_cast<int>(node);
  int c = sched_getcpu();
  if (c < 0) return -1;
  std::string dir = strprintf("/sys/devices/system/cpu/cpu%d", c);
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.compare(0, 4, "node") == 0 && std::isdigit(static_cast<unsigned char>(n[4]))) {
      found = std::atoi(n.c_str() + 4);
      break;
    }
  }
  closedir(d);
  return found;
}

// NUMA node of a PCI device from sysfs, -1 when unknown (no such file, or the kernel says -1).
int pciNumaNode(const std::string& busId) {
  std::ifstream f("/sys/bus/pci/devices/" + canonicalPciBusId(busId) + "/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node < 0 ? -1 : node;
}

}  // namespace

Status discoverLocalPe(GpuQuery& q, int device, PeRecord* out) {
  PeRecord rec;
  TETHER_TRY(hostIdentity(&rec.host));
  rec.cpuNumaNode = currentCpuNumaNode();
  if (device != -1) {
    int count = q.deviceCount();
    if (device < 0 || device >= count)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "discoverLocalPe: GPU %d requested but this process sees %d GPU(s)", device,
                  count);
    rec.gpu.present = true;
    rec.gpu.device = device;
    rec.gpu.busId = canonicalPciBusId(q.busId(device));
    rec.gpu.name = q.name(device);
    rec.gpu.vmm = q.vmmSupported(device);
    rec.gpu.numaNode = pciNumaNode(rec.gpu.busId);
  }
  TETHER_LOG_DEBUG(LogSys::Topology, "this PE: host %s, CPU NUMA node %d, GPU %s", rec.host.c_str(), rec.cpuNumaNode,
                   rec.gpu.present ? (rec.gpu.busId + " (" + rec.gpu.name + ")").c_str() : "none");
  *out = rec;
  return Status::ok();
}

Status discoverPairs(GpuQuery& q, int me, Topology* topo) {
  const int n = topo->size();
  if (me < 0 || me >= n)
    TETHER_FAIL(TETHER_ERR_INVALID_PE, "discoverPairs: PE %d outside the topology's %d PEs", me, n);
  topo->pairs.assign(static_cast<size_t>(n) * static_cast<size_t>(n), PairRecord());
  // Map each GPU of this host to a device ordinal of this process once.
  std::vector<int> dev(static_cast<size_t>(n), -1);
  std::vector<std::string> bus(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const PeRecord& p = topo->pes[static_cast<size_t>(i)];
    if (!p.gpu.present || !topo->sameHost(me, i)) continue;
    bus[static_cast<size_t>(i)] = canonicalPciBusId(p.gpu.busId);
    dev[static_cast<size_t>(i)] = q.deviceByBusId(p.gpu.busId);
    if (dev[static_cast<size_t>(i)] < 0)
      TETHER_LOG_INFO(LogSys::Topology, "GPU %s of PE %d is not visible in this process: no peer access to it assumed",
                      p.gpu.busId.c_str(), i);
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || bus[static_cast<size_t>(i)].empty() || bus[static_cast<size_t>(j)].empty()) continue;
      PairRecord& r = topo->pairs[static_cast<size_t>(i * n + j)];
      if (bus[static_cast<size_t>(i)] == bus[static_cast<size_t>(j)]) {
        r.p2pAccess = true;
        r.nativeAtomics = true;
        r.link = LinkType::SameGpu;
        continue;
      }
      int di = dev[static_cast<size_t>(i)], dj = dev[static_cast<size_t>(j)];
      if (di < 0 || dj < 0) continue;
      r.p2pAccess = q.canAccessPeer(di, dj);
      r.nativeAtomics = r.p2pAccess && q.nativeAtomics(di, dj);
      r.nvlinkCount = q.nvlinkCount(di, dj);
      r.link = r.nvlinkCount > 0 ? LinkType::NvLink : r.p2pAccess ? LinkType::Pcie : LinkType::None;
    }
  }
  return Status::ok();
}

}  // namespace tether
