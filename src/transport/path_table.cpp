// PathTable: path choice and connection at start-up, the remote-key exchange, quiet/fence over the paths in use.
#include "transport/path_table.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"

namespace tether {

Status PathTable::setUp(const Topology& topo, int me, const PathOverrides& ov, ProviderRegistry registry,
                        const SegmentMap (&segs)[kSegKinds], Bootstrap& boot) {
  registry_ = std::move(registry);
  const int n = topo.size();
  paths_.assign(static_cast<size_t>(n), PeerPath{});
  for (size_t i = 0; i < registry_.size(); ++i)
    TETHER_TRY(registry_.at(i).start(topo, me, ov, boot).withContext(
        strprintf("tether_init: %s provider", registry_.at(i).name())));
  for (int pe = 0; pe < n; ++pe) {
    for (SegKind kind : {SegKind::Host, SegKind::Device}) {
      const SegmentMap& seg = segs[static_cast<int>(kind)];
      if (!seg.present) continue;
      size_t chosen = 0;
      ProbeResult r;
      TETHER_TRY(registry_.choose(topo, me, pe, kind, ov, &chosen, &r).withContext("tether_init"));
      Provider& prov = registry_.at(chosen);
      Connection c;
      TETHER_TRY(prov.connect(topo, me, pe, kind, &c).withContext("tether_init"));
      SegPath& p = paths_[static_cast<size_t>(pe)].seg[static_cast<int>(kind)];
      p.kind = r.path;
      p.reason = r.reason;
      p.ops = c.ops;
      p.ctx = c.ctx;
      // Every same-host path has the peer's segment mapped here (staged too: mapped for the owner's GPU, whose copy
      // engine the staged ops drive, though not load/store reachable: tether_ptr checks kCapLoadStore itself). Only
      // the network path has no base (a network peer's localIndex names another host's PE).
      p.base = r.path == PathKind::Net ? nullptr : seg.peerBase(pe);
      p.provider = &prov;
      addInUse(p);
      TETHER_LOG_INFO(LogSys::Transport, "path to the %s segment of PE %d: %s via %s (%s)", segKindName(kind), pe,
                      pathKindName(r.path), p.ops->name, r.reason.c_str());
    }
  }
  for (int k = 0; k < kSegKinds; ++k) {
    keyBytes_[k].assign(static_cast<size_t>(n), {});
    keys_[k].assign(static_cast<size_t>(n), RemoteKey{nullptr, 0});
  }
  for (SegKind kind : {SegKind::Host, SegKind::Device}) {
    const SegmentMap& seg = segs[static_cast<int>(kind)];
    if (seg.present) TETHER_TRY(exchangeKeys(kind, seg.myBase, seg.myBytes, boot).withContext("tether_init"));
  }
  return Status::ok();
}

void PathTable::mirror(SegKind from, SegKind to, const std::function<char*(int pe)>& peerBase) {
  for (int pe = 0; pe < size(); ++pe) {
    PeerPath& pp = paths_[static_cast<size_t>(pe)];
    SegPath& p = pp.seg[static_cast<int>(to)];
    p = pp.seg[static_cast<int>(from)];
    if (p.base) p.base = peerBase(pe);
    p.key = nullptr;
  }
}

Status PathTable::segmentsGrew(SegKind kind, const void* myBase, uint64_t myBytes, Bootstrap& boot) {
  return exchangeKeys(kind, myBase, myBytes, boot);
}

namespace {

// A PE's keys for one segment kind: for each provider with a non-empty key, [u16 name length][name][u64 size][key].
void appendKey(const char* name, const std::vector<char>& key, std::vector<char>* out) {
  const uint16_t len = static_cast<uint16_t>(std::strlen(name));
  const uint64_t size = key.size();
  const size_t at = out->size();
  out->resize(at + sizeof len + len + sizeof size + key.size());
  char* d = out->data() + at;
  std::memcpy(d, &len, sizeof len);
  std::memcpy(d + sizeof len, name, len);
  std::memcpy(d + sizeof len + len, &size, sizeof size);
  if (size) std::memcpy(d + sizeof len + len + sizeof size, key.data(), key.size());
}

// The key `name` registered in blob [p, p + n); *found false when it has none. Fails on a malformed blob.
Status findKey(const char* p, size_t n, const char* name, std::vector<char>* key, bool* found) {
  *found = false;
  size_t at = 0;
  while (at < n) {
    uint16_t len = 0;
    uint64_t size = 0;
    if (n - at < sizeof len) break;
    std::memcpy(&len, p + at, sizeof len);
    if (n - at - sizeof len < len + sizeof size) break;
    const std::string entry(p + at + sizeof len, len);
    std::memcpy(&size, p + at + sizeof len + len, sizeof size);
    const size_t head = sizeof len + len + sizeof size;
    if (n - at - head < size) break;
    if (entry == name) {
      key->assign(p + at + head, p + at + head + size);
      *found = true;
    }
    at += head + size;
  }
  if (at != n) TETHER_FAIL(TETHER_ERR_INTERNAL, "malformed remote-key record (%zu bytes, parsed %zu)", n, at);
  return Status::ok();
}

}  // namespace

Status PathTable::exchangeKeys(SegKind kind, const void* myBase, uint64_t myBytes, Bootstrap& boot) {
  std::vector<char> mine, key;
  for (size_t i = 0; i < registry_.size(); ++i) {
    Provider& prov = registry_.at(i);
    TETHER_TRY(prov.registerSegment(kind, myBase, myBytes, &key)
                   .withContext(strprintf("%s provider: registering the %s segment", prov.name(), segKindName(kind))));
    if (!key.empty()) appendKey(prov.name(), key, &mine);
  }
  const size_t n = paths_.size();
  const uint64_t myLen = mine.size();
  std::vector<uint64_t> lens(n);
  TETHER_TRY(boot.allgather(&myLen, lens.data(), sizeof myLen).withContext("remote-key exchange"));
  const uint64_t most = *std::max_element(lens.begin(), lens.end());
  const int k = static_cast<int>(kind);
  if (most == 0) {  // nobody has a key: every path of this kind stays keyless
    for (size_t pe = 0; pe < n; ++pe) {
      keyBytes_[k][pe].clear();
      keys_[k][pe] = RemoteKey{nullptr, 0};
      paths_[pe].seg[k].key = nullptr;
    }
    return Status::ok();
  }
  hasKeys_ = true;
  mine.resize(most, 0);
  std::vector<char> all(most * n);
  TETHER_TRY(boot.allgather(mine.data(), all.data(), most).withContext("remote-key exchange"));
  for (size_t pe = 0; pe < n; ++pe) {
    SegPath& p = paths_[pe].seg[k];
    bool found = false;
    std::vector<char>& bytes = keyBytes_[k][pe];
    bytes.clear();
    if (p.provider)
      TETHER_TRY(findKey(all.data() + pe * most, lens[pe], p.provider->name(), &bytes, &found)
                     .withContext(strprintf("remote-key exchange: the %s segment of PE %zu", segKindName(kind), pe)));
    keys_[k][pe] = RemoteKey{bytes.data(), bytes.size()};
    p.key = found && !bytes.empty() ? &keys_[k][pe] : nullptr;
  }
  return Status::ok();
}

void PathTable::addInUse(const SegPath& p) {
  auto key = std::make_pair(p.ops, p.ctx);
  if (std::find(opsInUse_.begin(), opsInUse_.end(), key) == opsInUse_.end()) opsInUse_.push_back(key);
  if (std::find(active_.begin(), active_.end(), p.provider) == active_.end()) active_.push_back(p.provider);
}

Status PathTable::getMany(const SegKind* kinds, const GetItem* items, size_t count) const {
  Status err;
  std::vector<bool> taken(count, false);
  std::vector<GetItem> batch;
  for (size_t i = 0; i < count; ++i) {
    if (taken[i]) continue;  // fetched with an earlier item's context
    const SegPath& sp = path(items[i].pe, kinds[i]);
    batch.clear();
    for (size_t j = i; j < count; ++j) {
      const SegPath& o = path(items[j].pe, kinds[j]);
      if (taken[j] || o.ops != sp.ops || o.ctx != sp.ctx) continue;
      batch.push_back(items[j]);
      taken[j] = true;
    }
    Status s;
    if (sp.ops->getv) {
      s = sp.ops->getv(sp.ctx, batch.data(), batch.size());
    } else {
      for (size_t k = 0; k < batch.size() && s.isOk(); ++k)
        s = sp.ops->get(sp.ctx, batch[k].pe, batch[k].dst, batch[k].src, batch[k].n, false);
    }
    if (err.isOk() && !s.isOk()) err = s;
  }
  return err;
}

Status PathTable::quiet() const {
  for (const auto& o : opsInUse_) TETHER_TRY(o.first->quiet(o.second));
  return Status::ok();
}

Status PathTable::fence() const {
  for (const auto& o : opsInUse_) TETHER_TRY(o.first->fence(o.second));
  return Status::ok();
}

}  // namespace tether
