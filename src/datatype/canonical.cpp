// Commit: type tree -> canonical form (docs/datatype.md "Canonical form").
//
// Two stages. The structural stage folds the tree bottom-up into segments of strided pieces in bounded space (a
// vector of 1e9 blocks is one piece). When the result has at most kExactBlocks contiguous blocks per instance, the
// exact stage re-derives the form from the expanded block sequence alone (merge contiguous blocks, greedy folding,
// minimal period), so every description of the same bytes in the same order reaches the same form.
#include "datatype/canonical.h"

#include <algorithm>
#include <unordered_map>

#include "base/status.h"

namespace tether::dt {

int64_t Piece::elements() const {
  int64_t n = 1;
  for (int k = 0; k < nd; ++k) n *= count[k];
  return n;
}

bool Piece::sameShape(const Piece& o) const {
  if (block != o.block || nd != o.nd) return false;
  for (int k = 0; k < nd; ++k)
    if (count[k] != o.count[k] || stride[k] != o.stride[k]) return false;
  return true;
}

namespace {

// ---- piece normalisation and merging ---------------------------------------------------------------------------

void removeDim(Piece* p, int k) {
  for (int j = k; j + 1 < p->nd; ++j) p->count[j] = p->count[j + 1], p->stride[j] = p->stride[j + 1];
  --p->nd;
  p->count[p->nd] = 1;
  p->stride[p->nd] = 0;
}

// Normal form of one piece: no dimension of count 1; dimension 0 is not contiguous with the block; no two adjacent
// dimensions that form one arithmetic sequence. Byte sequence unchanged.
void normalize(Piece* p) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int k = 0; k < p->nd; ++k)
      if (p->count[k] == 1) { removeDim(p, k); changed = true; break; }
    if (changed) continue;
    if (p->nd >= 1 && p->stride[0] == p->block) {
      p->block *= p->count[0];
      removeDim(p, 0);
      changed = true;
      continue;
    }
    for (int k = 0; k + 1 < p->nd; ++k) {
      int64_t span = 0;
      if (mulOk(p->count[k], p->stride[k], &span) && span == p->stride[k + 1]) {
        p->count[k] *= p->count[k + 1];
        removeDim(p, k + 1);
        changed = true;
        break;
      }
    }
  }
}

// Offset one past the top dimension of p (where its next top-level element would start); false on overflow.
bool topEnd(const Piece& p, int64_t* end) {
  int t = p.nd - 1;
  int64_t span = 0;
  return mulOk(p.count[t], p.stride[t], &span) && addOk(p.offset, span, end);
}

// Same block and dimensions 0..n-1.
bool sameLower(const Piece& a, const Piece& b, int n) {
  if (a.block != b.block) return false;
  for (int k = 0; k < n; ++k)
    if (a.count[k] != b.count[k] || a.stride[k] != b.stride[k]) return false;
  return true;
}

// Tries to express a followed by b (pack order) as one piece, written to *a. Rules, first match wins:
//  1. two plain blocks, b right after a: one longer block;
//  2. b continues a's top dimension (b is one more top element of a, or a run of them with a's top stride);
//  3. a is one top element of b and b's top dimension continues backwards onto a;
//  4. a and b of the same shape (nd < kMaxDims): a new top dimension of count 2.
bool tryMerge(Piece* a, const Piece& b) {
  if (a->block != b.block && (a->nd != 0 || b.nd != 0)) return false;  // rules 2-4 all need equal blocks
  int64_t end = 0;
  if (a->nd == 0 && b.nd == 0) {
    if (addOk(a->offset, a->block, &end) && end == b.offset) {
      a->block += b.block;
      return true;
    }
  }
  if (a->nd >= 1) {
    int t = a->nd - 1;
    if (topEnd(*a, &end) && end == b.offset) {
      if (b.nd == a->nd && sameLower(*a, b, t) && b.stride[t] == a->stride[t]) {
        a->count[t] += b.count[t];
        normalize(a);
        return true;
      }
      if (b.nd == t && sameLower(*a, b, t)) {
        a->count[t] += 1;
        normalize(a);
        return true;
      }
    }
  }
  if (b.nd >= 1 && a->nd == b.nd - 1 && sameLower(b, *a, a->nd)) {
    int t = b.nd - 1;
    int64_t start = 0;
    if (addOk(a->offset, b.stride[t], &start) && start == b.offset) {
      Piece m = b;
      m.offset = a->offset;
      m.count[t] += 1;
      normalize(&m);
      *a = m;
      return true;
    }
  }
  if (a->nd < kMaxDims && a->sameShape(b)) {
    int64_t d = 0;
    if (!__builtin_sub_overflow(b.offset, a->offset, &d)) {
      a->count[a->nd] = 2;
      a->stride[a->nd] = d;
      ++a->nd;
      normalize(a);
      return true;
    }
  }
  return false;
}

// Appends p to a piece list in pack order, merging backwards while merges apply.
void appendPiece(std::vector<Piece>* list, Piece p) {
  normalize(&p);
  if (p.bytes() == 0) return;
  list->push_back(p);
  while (list->size() >= 2 && tryMerge(&(*list)[list->size() - 2], list->back())) list->pop_back();
}

// A plain block appended to a piece list: a copy of a constant default piece, then its two fields. (Building the
// 96-byte piece on the stack field by field and copying it made the copy's wide loads wait on the narrow stores
// (store forwarding fails): the commit of 1000 irregular blocks spent most of its time there.)
void pushPlain(std::vector<Piece>* l, int64_t offset, int64_t len) {
  static const Piece kPlain{};
  l->push_back(kPlain);
  Piece& p = l->back();
  p.offset = offset;
  p.block = len;
}

// appendPiece() of a plain block of len > 0 bytes at offset, with its two common outcomes taken directly. For a
// plain block b after the last piece a, tryMerge(a, b) can only apply rule 1 or 4 (a plain too) or rule 2 (a 1-D
// of the same block, continued at its end: one more element). Other pieces take b as a new last piece, and the
// retry stops at once (the pair failed). Growing a 1-D piece's count changes the retried pair (the piece before
// it, a) only through the count: the pair merges then only when a's count reaches the count of that piece (rule 2
// onto a 2-D piece, rule 4 with a 1-D one); the count-independent conditions already failed when the pair was
// last tried. So the retry runs only at that count.
void appendBlock(std::vector<Piece>* list, int64_t offset, int64_t len) {
  std::vector<Piece>& l = *list;
  const size_t size = l.size();
  if (size >= 1) {
    Piece& a = l[size - 1];
    if (a.nd >= 1) {
      int64_t end = 0;
      if (a.nd == 1 && a.block == len && topEnd(a, &end) && end == offset) {
        ++a.count[0];
        if (size >= 2) {
          const Piece& b = l[size - 2];
          if ((b.nd == 1 || b.nd == 2) && b.block == len && b.stride[0] == a.stride[0] && b.count[0] == a.count[0])
            while (l.size() >= 2 && tryMerge(&l[l.size() - 2], l.back())) l.pop_back();
        }
        return;
      }
      pushPlain(&l, offset, len);
      return;
    }
  }
  if (size >= 1) {  // a is plain: rule 1 (adjacent), rule 4 (same length) or nothing
    Piece& a = l[size - 1];
    int64_t aEnd = 0, d = 0;
    const bool adjacent = addOk(a.offset, a.block, &aEnd) && aEnd == offset;
    if (!adjacent && a.block == len && !__builtin_sub_overflow(offset, a.offset, &d)) {
      a.nd = 1, a.count[0] = 2, a.stride[0] = d;  // rule 4; already normal (d != len: not adjacent)
      if (size >= 2) {
        // Retried pair: rule 2 onto a 2-D piece of this row shape is the common outcome (the next row of a plane).
        Piece& b = l[size - 2];
        int64_t end = 0;
        if (b.nd == 2 && b.block == len && b.count[0] == 2 && b.stride[0] == d && topEnd(b, &end) && end == a.offset) {
          ++b.count[1];
          l.pop_back();
        } else {
          // tryMerge(b, the pair) needs, by its rules: b's block equal; b plain and the pair one stride after it
          // (rule 3), or b of 1 or 2 dimensions with the pair's stride in dimension 0 (rules 2 and 4). Irregular
          // lists fail this at once: skip the call.
          int64_t at = 0;
          const bool may = b.block == len && (b.nd == 0 ? addOk(b.offset, d, &at) && at == a.offset
                                                       : b.nd <= 2 && b.stride[0] == d);
          if (!may) return;
        }
      }
      while (l.size() >= 2 && tryMerge(&l[l.size() - 2], l.back())) l.pop_back();
      return;
    }
    if (!adjacent && a.block != len) {  // neither rule applies
      pushPlain(&l, offset, len);
      return;
    }
  }
  pushPlain(&l, offset, len);
  while (l.size() >= 2 && tryMerge(&l[l.size() - 2], l.back())) l.pop_back();
}

// ---- structural stage ----------------------------------------------------------------------------------------

struct Seg {
  std::vector<Piece> body;
  int64_t repeat = 1;
  int64_t stride = 0;
};
using Seq = std::vector<Seg>;

// A repeated one-piece body becomes one more dimension of the piece when it has room (repeat 1 afterwards).
void foldRepeat(Seg* g) {
  if (g->repeat == 1 || g->body.size() != 1 || g->body[0].nd >= kMaxDims) return;
  Piece& p = g->body[0];
  p.count[p.nd] = g->repeat;
  p.stride[p.nd] = g->stride;
  ++p.nd;
  normalize(&p);
  g->repeat = 1;
  g->stride = 0;
}

int64_t pieceCount(const Seq& s) {
  int64_t n = 0;
  for (const Seg& g : s) n += static_cast<int64_t>(g.body.size());
  return n;
}

class Builder {
 public:
  // The structural form of t, built afresh (the root, and Resized/Dup pass-throughs). With `runs`: set to whether
  // the form is one segment built by appendPiece() from plain blocks no two consecutive of which are adjacent, i.e.
  // from the type's contiguous runs themselves (then it is what the exact stage would build; see canonicalize()).
  Status build(const Type& t, Seq* out, bool* runs = nullptr);

 private:
  // The structural form of a child, built once per node and kept (children are shared by many entries).
  Status child(const Type& t, const Seq** out);
  Status checkSize(int64_t pieces, int64_t extra) {
    if (pieces + extra > kMaxPieces)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
                  "tether_type_commit: the canonical form would exceed %lld pieces (strided nesting deeper than %d "
                  "levels of large counts, or repeated irregular parts inside irregular parts); see docs/datatype.md",
                  static_cast<long long>(kMaxPieces), kMaxDims);
    return Status::ok();
  }
  static Status overflow() {
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "tether_type_commit: displacement arithmetic overflows int64");
  }
  // One segment of repeat 1 with the whole sequence expanded.
  Status materialize(const Seq& s, std::vector<Piece>* body);
  Status replicate(Seq s, int64_t n, int64_t stride, Seq* out);
  static Status shift(Seq* s, int64_t d);
  Status concat(Seq* a, Seq b);
  // The blocks of an HIndexed or Struct node, appended to the empty *s; *runs as for build().
  Status entries(const Type& t, Seq* s, bool* runs);
  // entries() of an HIndexed node whose child is one contiguous block `unit` (a basic type, a contiguous run): every
  // entry is one plain block, so no piece is built per entry; periodic entries become one repeated segment.
  Status plainEntries(const Type& t, const Piece& unit, Seq* s, bool* runs);

  std::unordered_map<const Type*, Seq> memo_;
};

Status Builder::materialize(const Seq& s, std::vector<Piece>* body) {
  int64_t total = 0;
  for (const Seg& g : s) total += g.repeat * static_cast<int64_t>(g.body.size());
  TETHER_TRY(checkSize(0, total));
  body->clear();
  for (const Seg& g : s)
    for (int64_t r = 0; r < g.repeat; ++r)
      for (Piece p : g.body) {
        int64_t d = 0;
        if (!mulOk(r, g.stride, &d) || !addOk(p.offset, d, &p.offset)) return overflow();
        appendPiece(body, p);
      }
  return Status::ok();
}

Status Builder::shift(Seq* s, int64_t d) {
  for (Seg& g : *s)
    for (Piece& p : g.body)
      if (!addOk(p.offset, d, &p.offset)) return overflow();
  return Status::ok();
}

// n copies of s, copy k at k * stride bytes.
Status Builder::replicate(Seq s, int64_t n, int64_t stride, Seq* out) {
  if (n == 0 || s.empty()) {
    out->clear();
    return Status::ok();
  }
  if (n == 1) {
    *out = std::move(s);
    return Status::ok();
  }
  if (s.size() == 1) {
    Seg& g = s[0];
    if (g.repeat > 1) {
      int64_t span = 0;
      if (mulOk(g.repeat, g.stride, &span) && span == stride) {  // continues the repetition
        if (!mulOk(g.repeat, n, &g.repeat)) return overflow();
        *out = std::move(s);
        return Status::ok();
      }
      foldRepeat(&g);
    }
    if (g.repeat == 1) {  // the copies become the repetition (a dimension of a lone piece where it has room)
      g.repeat = n;
      g.stride = stride;
      foldRepeat(&g);
      *out = std::move(s);
      return Status::ok();
    }
  }
  Seg g;
  TETHER_TRY(materialize(s, &g.body));
  g.repeat = n;
  g.stride = stride;
  out->assign(1, std::move(g));
  return Status::ok();
}

Status Builder::concat(Seq* a, Seq b) {
  TETHER_TRY(checkSize(pieceCount(*a), pieceCount(b)));
  for (Seg& g : b) {
    if (!a->empty() && a->back().repeat == 1 && g.repeat == 1) {
      for (const Piece& p : g.body) appendPiece(&a->back().body, p);
    } else {
      a->push_back(std::move(g));
    }
  }
  return Status::ok();
}

Status Builder::child(const Type& t, const Seq** out) {
  auto it = memo_.find(&t);
  if (it == memo_.end()) {
    Seq s;
    TETHER_TRY(build(t, &s));
    it = memo_.emplace(&t, std::move(s)).first;
  }
  *out = &it->second;
  return Status::ok();
}

// The smallest period p (1..kMaxPeriod) of an entry list: lengths repeat every p entries and entry i + p lies a
// fixed D bytes after entry i, for every i; every length positive; at least two periods. 0 if none. Checks stop at
// the first mismatch, so irregular lists cost a few comparisons per candidate.
constexpr size_t kMaxPeriod = 8;
size_t entryPeriod(const std::vector<int64_t>& len, const std::vector<int64_t>& disp, int64_t* stride) {
  const size_t m = len.size();
  for (size_t p = 1; p <= kMaxPeriod && 2 * p <= m; ++p) {
    bool positive = true;
    for (size_t j = 0; j < p; ++j) positive = positive && len[j] > 0;
    if (!positive) return 0;  // a zero length at the start repeats in every period, or breaks it
    int64_t d = 0;
    if (__builtin_sub_overflow(disp[p], disp[0], &d)) continue;
    size_t i = 0;
    for (; i + p < m; ++i) {
      int64_t e = 0;
      if (len[i + p] != len[i] || __builtin_sub_overflow(disp[i + p], disp[i], &e) || e != d) break;
    }
    if (i + p == m) {
      *stride = d;
      return p;
    }
  }
  return 0;
}

Status Builder::plainEntries(const Type& t, const Piece& unit, Seq* s, bool* runs) {
  const std::vector<int64_t>& len = t.blocklengths();
  const std::vector<int64_t>& disp = t.displacements();
  const size_t m = len.size();
  // Entries [from, to) appended to body as their maximal contiguous runs (an entry that starts where the one before
  // ends is joined to it; zero lengths skipped), each with appendBlock(): what the exact stage builds from them.
  auto append = [&](size_t from, size_t to, std::vector<Piece>* body) -> Status {
    // Locals, not the captured vectors and piece: appendBlock() writes memory, so every captured load would repeat.
    const int64_t* const lens = len.data();
    const int64_t* const disps = disp.data();
    const int64_t unitOff = unit.offset, unitBlock = unit.block;
    int64_t runOff = 0, runLen = 0, runEnd = 0;
    for (size_t i = from; i < to; ++i) {
      if (lens[i] == 0) continue;
      int64_t off = 0, n = 0;
      if (!addOk(disps[i], unitOff, &off) || !mulOk(lens[i], unitBlock, &n)) return overflow();
      if (runLen && off == runEnd) {
        if (!addOk(runLen, n, &runLen) || !addOk(runEnd, n, &runEnd)) return overflow();
        continue;
      }
      if (runLen) appendBlock(body, runOff, runLen);
      if (body->size() >= static_cast<size_t>(kMaxPieces)) TETHER_TRY(checkSize(static_cast<int64_t>(body->size()), 1));
      runOff = off, runLen = n;
      if (!addOk(off, n, &runEnd)) return overflow();
    }
    if (runLen) appendBlock(body, runOff, runLen);
    return Status::ok();
  };
  int64_t stride = 0;
  const size_t p = entryPeriod(len, disp, &stride);
  if (p) {  // one period, repeated; the entries after the last whole period follow as their own segment
    const size_t reps = m / p;
    Seg g;
    TETHER_TRY(append(0, p, &g.body));
    g.repeat = static_cast<int64_t>(reps);
    g.stride = stride;
    foldRepeat(&g);  // a one-piece period (equal blocks at fixed gaps) becomes one more dimension of that piece
    s->push_back(std::move(g));
    Seg rest;
    TETHER_TRY(append(reps * p, m, &rest.body));
    if (!rest.body.empty()) s->push_back(std::move(rest));
    *runs = false;  // not the runs one by one: the exact stage (or the structural form) takes it from here
    return Status::ok();
  }
  Seg one;
  one.body.reserve(std::min<size_t>(m, 4096));
  TETHER_TRY(append(0, m, &one.body));
  if (!one.body.empty()) s->push_back(std::move(one));
  *runs = true;  // the maximal runs themselves, in pack order, into an empty list
  return Status::ok();
}

Status Builder::entries(const Type& t, Seq* s, bool* runs) {
  if (t.kind() == Kind::HIndexed) {
    const Type& c = *t.children()[0];
    const Seq* cs = nullptr;
    TETHER_TRY(child(c, &cs));
    if (cs->empty()) {
      *runs = true;  // no bytes: as the general loop, which skips every entry
      return Status::ok();
    }
    const Seg& g = (*cs)[0];
    if (cs->size() == 1 && g.repeat == 1 && g.body.size() == 1 && g.body[0].nd == 0 &&
        g.body[0].block == c.bounds().extent())
      return plainEntries(t, g.body[0], s, runs);
  }
  int64_t pieces = 0;
  bool plain = true;  // every entry so far was a plain block, not adjacent to the one before
  int64_t end = 0;    // where the last plain block ends
  bool any = false;
  const Type* last = nullptr;
  const Seq* cs = nullptr;
  for (size_t i = 0; i < t.blocklengths().size(); ++i) {
    const int64_t n = t.blocklengths()[i];
    if (n == 0) continue;
    const Type& c = *t.children()[t.kind() == Kind::Struct ? i : 0];
    if (&c != last) {
      TETHER_TRY(child(c, &cs));
      last = &c;
    }
    if (cs->empty()) continue;
    const Seg& g = (*cs)[0];
    if (cs->size() == 1 && g.repeat == 1 && g.body.size() == 1 && (n == 1 || g.body[0].nd < kMaxDims)) {
      // One piece (a basic type, a strided nest): what replicate + shift + concat do, without building a Seq.
      Piece q = g.body[0];
      if (n > 1) {
        q.count[q.nd] = n;
        q.stride[q.nd] = c.bounds().extent();
        ++q.nd;
        normalize(&q);
      }
      if (!addOk(q.offset, t.displacements()[i], &q.offset)) return overflow();
      if (plain) {
        plain = q.nd == 0 && !(any && q.offset == end) && addOk(q.offset, q.block, &end);
        any = true;
      }
      TETHER_TRY(checkSize(pieces, 1));
      if (!s->empty() && s->back().repeat == 1) {
        std::vector<Piece>& body = s->back().body;
        const int64_t before = static_cast<int64_t>(body.size());
        if (q.nd == 0) appendBlock(&body, q.offset, q.block);
        else appendPiece(&body, q);
        pieces += static_cast<int64_t>(body.size()) - before;
      } else {
        Seg one;
        if (s->empty())  // room for every entry (bounded): no regrowth while the body is built
          one.body.reserve(std::min<size_t>(t.blocklengths().size() - i, 4096));
        one.body.push_back(q);
        s->push_back(std::move(one));
        ++pieces;
      }
      continue;
    }
    plain = false;
    Seq part;
    TETHER_TRY(replicate(*cs, n, c.bounds().extent(), &part));
    TETHER_TRY(shift(&part, t.displacements()[i]));
    TETHER_TRY(concat(s, std::move(part)));
    pieces = pieceCount(*s);
  }
  *runs = plain;
  return Status::ok();
}

Status Builder::build(const Type& t, Seq* out, bool* runs) {
  Seq s;
  bool plain = false;
  switch (t.kind()) {
    case Kind::Basic: {
      Seg g;
      Piece p;
      p.block = t.bounds().size;
      g.body.push_back(p);
      s.push_back(std::move(g));
      break;
    }
    case Kind::Resized:
    case Kind::Dup:
      TETHER_TRY(build(*t.children()[0], &s, &plain));
      break;
    case Kind::HVector: {
      // No data (count or blocklength 0): nothing to build. (The block would be built first, and a huge blocklength
      // of a type with no instances was accepted -- its size is 0 -- but overflows the block's arithmetic.)
      if (t.count() == 0 || t.blocklength() == 0) break;
      const Type& c = *t.children()[0];
      const Seq* cs = nullptr;
      Seq block;
      TETHER_TRY(child(c, &cs));
      TETHER_TRY(replicate(*cs, t.blocklength(), c.bounds().extent(), &block));
      TETHER_TRY(replicate(std::move(block), t.count(), t.stride(), &s));
      break;
    }
    case Kind::HIndexed:
    case Kind::Struct:
      TETHER_TRY(entries(t, &s, &plain));
      break;
  }
  if (runs) *runs = plain;
  // Drop empty segments.
  s.erase(std::remove_if(s.begin(), s.end(), [](const Seg& g) { return g.body.empty(); }), s.end());
  *out = std::move(s);
  return Status::ok();
}

// ---- exact stage and finishing ---------------------------------------------------------------------------------

// Contiguous blocks of one instance (saturating at limit + 1).
int64_t blockCount(const Seq& s, int64_t limit) {
  int64_t n = 0;
  for (const Seg& g : s)
    for (const Piece& p : g.body) {
      int64_t e = 0;
      if (!mulOk(p.elements(), g.repeat, &e) || !addOk(n, e, &n) || n > limit) return limit + 1;
    }
  return n;
}

// The exact stage's input and folding: the maximal contiguous runs of one instance in pack order, each appended
// with appendPiece() semantics, so the result depends on the runs alone. Equivalent to joining adjacent blocks and
// calling appendPiece() once per run, but runs that only lengthen the last piece (a 1-D piece of the same block and
// stride, continued at its end) are taken many at a time: such a step can change nothing but that piece's count,
// and the merge retried after it (last two pieces) can only succeed when the count reaches that of the piece
// before (rule 2 onto a 2-D piece, rule 4 with a 1-D one); every other condition of tryMerge() on that pair does not
// depend on the count and already failed when the pair was last tried. So a batch stops at that count and retries.
class RunFolder {
 public:
  explicit RunFolder(std::vector<Piece>* out) : list_(out) {}

  // Every element of piece p shifted by `shift`, in pack order.
  void piece(const Piece& p, int64_t shift) {
    const int64_t base = p.offset + shift;
    const int64_t len = p.block, c0 = p.count[0], s0 = p.stride[0];
    if (p.nd <= 1) {
      if (p.nd == 0) run(base, len);
      else row(base, len, c0, s0);
      return;
    }
    // A plane (dimensions 0 and 1) whose runs do not touch one another is folded whole: all its runs but the first
    // (which may join the pending one) and the last (kept pending) go to fold() / foldRows() directly.
    const int64_t c1 = p.count[1], s1 = p.stride[1];
    const bool whole = s0 != len && c0 >= 2 && c1 >= 2 && (c0 - 1) * s0 + len != s1;
    int64_t idx[kMaxDims] = {0, 0, 0, 0};
    for (;;) {
      int64_t off = base;
      for (int k = 2; k < p.nd; ++k) off += idx[k] * p.stride[k];
      if (whole) {
        run(off, len);
        flush();
        fold(off + s0, len, c0 - 1, s0);
        if (c1 > 2) foldRows(off + s1, len, c0, s0, c1 - 2, s1);
        const int64_t last = off + (c1 - 1) * s1;
        fold(last, len, c0 - 1, s0);
        has_ = true, off_ = last + (c0 - 1) * s0, len_ = len;
      } else {
        for (int64_t j = 0; j < c1; ++j) row(off + j * s1, len, c0, s0);
      }
      int k = 2;
      for (; k < p.nd; ++k) {
        if (++idx[k] < p.count[k]) break;
        idx[k] = 0;
      }
      if (k >= p.nd) break;
    }
  }

  void flush() {
    if (!has_) return;
    has_ = false;
    fold(off_, len_, 1, 0);
  }

  // The pending run (a block not yet folded: the next one may still join it), for foldRepeated().
  struct Pending {
    bool has;
    int64_t off, len;
  };
  Pending pending() const { return Pending{has_, off_, len_}; }
  void setPending(const Pending& p) { has_ = p.has, off_ = p.off, len_ = p.len; }

 private:
  // One contiguous block: joined to the pending run when it starts where that ends.
  void run(int64_t offset, int64_t len) {
    if (has_ && offset == off_ + len_) {
      len_ += len;
      return;
    }
    flush();
    has_ = true, off_ = offset, len_ = len;
  }

  // n blocks of len bytes at offset + i * stride (what run() would see n times).
  void row(int64_t offset, int64_t len, int64_t n, int64_t stride) {
    if (stride == len) {  // one contiguous run (normalised pieces never have this; kept for completeness)
      run(offset, len * n);
      return;
    }
    run(offset, len);
    if (n == 1) return;
    flush();  // the first element (joined or not); no later element of the row is adjacent to its predecessor
    if (n > 2) fold(offset + stride, len, n - 2, stride);
    has_ = true, off_ = offset + (n - 1) * stride, len_ = len;
  }

  // appendPiece() of n plain blocks of len bytes at offset + i * stride.
  void fold(int64_t offset, int64_t len, int64_t n, int64_t stride) {
    std::vector<Piece>& l = *list_;
    while (n > 0) {
      const size_t size = l.size();
      if (size >= 1) {
        Piece& a = l[size - 1];
        int64_t end = 0;
        if (a.nd == 1 && a.block == len && (n == 1 || a.stride[0] == stride) && topEnd(a, &end) && end == offset) {
          const int64_t take = grow(0, n);
          n -= take;
          if (n > 0) offset += take * stride;
          continue;
        }
      }
      appendBlock(&l, offset, len);
      if (--n > 0) offset += stride;
    }
  }

  // fold() of n whole rows (c0 runs of len bytes at stride s0), row j at offset + j * s1, no run adjacent to the
  // one before. A row that continues the last piece, 2-D with that row shape and top stride s1, only adds one to its
  // top count: its first run cannot merge with that piece (tryMerge() rules 1-4 need another dimension count),
  // the following runs build a 1-D piece that merges into it by rule 2 exactly when it holds c0 runs. As in fold(),
  // the merge retried afterwards depends on the new count only when it reaches the top count of the piece before
  // (rule 2 onto a 3-D piece, rule 4 with a 2-D one), so a batch stops there and retries.
  void foldRows(int64_t offset, int64_t len, int64_t c0, int64_t s0, int64_t n, int64_t s1) {
    std::vector<Piece>& l = *list_;
    while (n > 0) {
      const size_t size = l.size();
      if (size >= 1) {
        Piece& a = l[size - 1];
        int64_t end = 0;
        if (a.nd == 2 && a.block == len && a.count[0] == c0 && a.stride[0] == s0 && a.stride[1] == s1 &&
            topEnd(a, &end) && end == offset) {
          const int64_t take = grow(1, n);
          n -= take;
          if (n > 0) offset += take * s1;
          continue;
        }
      }
      fold(offset, len, c0, s0);
      if (--n > 0) offset += s1;
    }
  }

  // Adds up to n to count[k] of the last piece a (the caller checked that n more elements continue it) and returns
  // how many it added: all n, unless the piece before, b, could take a as one more element (rule 2, b of k + 2
  // dimensions) or pair with it (rule 4, k + 1) once the counts are equal; then it stops there and retries.
  int64_t grow(int k, int64_t n) {
    std::vector<Piece>& l = *list_;
    Piece& a = l.back();
    int64_t take = n;
    bool retry = false;
    if (l.size() >= 2) {
      const Piece& b = l[l.size() - 2];
      if ((b.nd == k + 1 || b.nd == k + 2) && sameLower(a, b, k) && b.stride[k] == a.stride[k] &&
          b.count[k] > a.count[k] && b.count[k] - a.count[k] <= take) {
        take = b.count[k] - a.count[k];
        retry = true;
      }
    }
    a.count[k] += take;
    if (retry) settle();
    return take;
  }

  // appendPiece()'s backward merging.
  void settle() {
    std::vector<Piece>& l = *list_;
    while (l.size() >= 2 && tryMerge(&l[l.size() - 2], l.back())) l.pop_back();
  }

  std::vector<Piece>* list_;
  bool has_ = false;
  int64_t off_ = 0, len_ = 0;
};

// Whether b is a shifted by d (same block and dimensions).
bool translated(const Piece& a, const Piece& b, int64_t d) { return a.sameShape(b) && b.offset == a.offset + d; }

// Folds the g.repeat repetitions of g's body into f's list, as f.piece() on each would, but in O(period) once the
// fold has become periodic. Let L_m be the list after m repetitions and d = m * stride. Folding only ever reads the
// pending run and the end of the list: it reads a piece before the last only after the last was merged into or
// changed, and a piece further back only after a merge into that one. So if the group of repetitions m..2m-1 left
// L_m unchanged but for its last k pieces (k = 0 or 1), it read at most L_m's last k + 1 pieces, and it replaced the
// last k with a tail T. If moreover the list's last k + 1 pieces (inside T) and the pending run are those of L_m
// shifted by d, the next group starts from the same state shifted by d and does the same shifted: it replaces the
// last k pieces with T shifted by d; and so on for every whole group. The merge rules compare differences only, so
// shifting is exact while no sum nears int64's range (the caller checks the bound: shiftExact). m = 1, 2 and 4 are
// tried; the repetitions after the last whole group are folded one by one.
void foldRepeated(RunFolder& f, std::vector<Piece>& list, const Seg& g, bool shiftExact) {
  const int64_t reps = g.repeat, stride = g.stride;
  auto rep = [&](int64_t r) {
    for (const Piece& p : g.body) f.piece(p, r * stride);
  };
  int64_t r = 0;
  if (shiftExact && reps >= 8) {
    for (int lg = 0; lg < 3; ++lg) {
      const int64_t m = int64_t{1} << lg, d = m * stride;
      while (r < m) rep(r++);  // (r == m already after the previous m's check)
      const std::vector<Piece> x = list;  // L_m
      const RunFolder::Pending was = f.pending();
      while (r < 2 * m) rep(r++);
      const RunFolder::Pending now = f.pending();
      if (now.has != was.has || (now.has && (now.len != was.len || now.off != was.off + d))) continue;
      const size_t nx = x.size(), n = list.size();
      for (size_t k = 0; k <= 1; ++k) {
        if (nx < k + 1 || n < nx + 1) continue;  // L_m's last k + 1 pieces; T (from nx - k on) of at least k + 1
        bool ok = true;
        for (size_t i = 0; ok && i + k < nx; ++i) ok = list[i].sameShape(x[i]) && list[i].offset == x[i].offset;
        for (size_t j = 0; ok && j <= k; ++j) ok = translated(x[nx - 1 - j], list[n - 1 - j], d);
        if (!ok) continue;
        // Periodic: each later group of m repetitions replaces the last k pieces with T shifted once more.
        const std::vector<Piece> t(list.begin() + static_cast<std::ptrdiff_t>(nx - k), list.end());
        const int64_t groups = (reps - r) / m;
        list.reserve(list.size() + static_cast<size_t>(groups) * (t.size() - k));
        for (int64_t q = 1; q <= groups; ++q) {
          list.resize(list.size() - k);
          for (const Piece& p : t) {
            list.push_back(p);  // then shifted in place (a shifted copy on the stack would stall its own copy)
            list.back().offset += q * d;
          }
        }
        RunFolder::Pending last = now;
        if (last.has) last.off += groups * d;
        f.setPending(last);
        r += groups * m;
        lg = 3;  // done
        break;
      }
    }
  }
  while (r < reps) rep(r++);
}

// Smallest period of a piece list: the list is repeat copies of its first `p` pieces, copy k shifted by k * d.
// Returns a segment (body = the period) when such p < size exists, else the list as one segment.
Seg periodic(std::vector<Piece> list) {
  Seg g;
  size_t n = list.size();
  for (size_t p = 1; p <= n / 2; ++p) {
    // The shape test first: it rejects most p of an irregular list without the division.
    if (!list[p].sameShape(list[0]) || n % p != 0) continue;
    int64_t d = 0;
    if (__builtin_sub_overflow(list[p].offset, list[0].offset, &d)) continue;
    bool ok = true;
    for (size_t i = p; i < n && ok; ++i) {
      int64_t di = 0;
      ok = list[i].sameShape(list[i - p]) && !__builtin_sub_overflow(list[i].offset, list[i - p].offset, &di) &&
           di == d;
    }
    if (ok) {
      list.resize(p);
      g.body = std::move(list);
      g.repeat = static_cast<int64_t>(n / p);
      g.stride = d;
      return g;
    }
  }
  g.body = std::move(list);
  return g;
}

// Whether some element of p starts where the element before it in pack order ends, across a dimension wrap: the
// last element of a row (plane, ...) touching the first of the next. normalize() rules out only dimension 0
// (stride[0] == block); such a piece is not the maximal-runs form the exact stage builds (it joins those two
// blocks), so the one-piece shortcut must not take it. Overflowing arithmetic counts as touching (the exact stage
// or the structural form then decides).
bool wrapsAdjacent(const Piece& p) {
  int64_t span = 0;  // offset of the last element of dimensions < k relative to the first
  for (int k = 1; k < p.nd; ++k) {
    int64_t step = 0, delta = 0;
    if (!mulOk(p.count[k - 1] - 1, p.stride[k - 1], &step) || !addOk(span, step, &span) ||
        __builtin_sub_overflow(p.stride[k], span, &delta))
      return true;
    if (delta == p.block) return true;
  }
  return false;
}

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

}  // namespace

Status canonicalize(const Type& type, Canonical* out) {
  Builder b;
  Seq s;
  bool runs = false;
  TETHER_TRY(b.build(type, &s, &runs));
  Seq fin;
  // Fast path: a layout that folds into one strided piece (vector, subarray, their nestings: the common case) is
  // already in normal form (normalize(): no unit dimensions, dimension 0 not contiguous with the block, no two
  // dimensions that form one arithmetic sequence), which is what the exact stage would rebuild from its blocks, so
  // the block expansion is skipped (commit in well under a microsecond, whatever the number of blocks) -- unless its
  // rows touch across a dimension wrap (wrapsAdjacent()), which the exact stage would join.
  bool single = false;
  if (s.size() == 1 && s[0].body.size() == 1) {
    Seg g = s[0];
    foldRepeat(&g);
    if (g.repeat == 1) {
      normalize(&g.body[0]);
      if (!wrapsAdjacent(g.body[0])) {
        fin.push_back(std::move(g));
        single = true;
      }
    }
  }
  // (The runs path counts its blocks in the final loop below instead: one pass fewer.)
  const int64_t blocks0 = !single && !runs ? blockCount(s, kExactBlocks) : 0;
  bool exact = !single && !runs && blocks0 <= kExactBlocks;
  if (single) {
    exact = true;  // unique per byte layout, as the exact stage's result
  } else if (runs) {
    // The structural stage appended the type's contiguous runs themselves, one by one, to an empty list: the exact
    // stage would append the same runs in the same order with the same appendPiece(), so its list is this one.
    if (!s.empty()) fin.push_back(periodic(std::move(s[0].body)));
  } else if (exact) {
    std::vector<Piece> list;
    list.reserve(static_cast<size_t>(blocks0));  // at most one piece per block: no reallocation while folding
    RunFolder f(&list);
    // Shifts by whole strides are exact for the merge rules while every offset, block end and stride stays far
    // inside int64 (foldRepeated): bounded by the type's extent and true bounds.
    const Bounds& tb = type.bounds();
    const uint64_t lim = uint64_t{1} << 60;
    bool shiftExact = magnitude(tb.trueLb) < lim && magnitude(tb.trueUb) < lim && magnitude(tb.extent()) < lim;
    for (const Seg& g : s) shiftExact = shiftExact && magnitude(g.stride) < lim / static_cast<uint64_t>(g.repeat + 1);
    for (const Seg& g : s) foldRepeated(f, list, g, shiftExact);
    f.flush();
    if (!list.empty()) fin.push_back(periodic(std::move(list)));
  } else {
    for (Seg& g : s) {
      if (g.repeat == 1) {
        fin.push_back(periodic(std::move(g.body)));
      } else {
        foldRepeat(&g);
        fin.push_back(std::move(g));
      }
    }
  }

  Canonical c;
  int64_t blocks = 0;  // per instance, saturating above kExactBlocks (the runs path's exactness)
  c.exact = exact;
  c.size = type.bounds().size;
  c.extent = type.bounds().extent();
  uint64_t bits = magnitude(c.extent);
  int64_t packed = 0;
  size_t total = 0;
  for (const Seg& g : fin) total += g.body.size();
  if (fin.size() == 1) {
    c.pieces = std::move(fin[0].body);  // one segment (the common case): its pieces as they are, not copied
  } else {
    c.pieces.reserve(total);
    for (Seg& g : fin) c.pieces.insert(c.pieces.end(), g.body.begin(), g.body.end());
  }
  c.segments.reserve(fin.size());
  size_t at = 0;
  for (const Seg& g : fin) {
    Segment seg;
    seg.firstPiece = static_cast<int64_t>(at);
    seg.numPieces = static_cast<int64_t>(fin.size() == 1 ? total : g.body.size());
    seg.repeat = g.repeat;
    seg.stride = g.stride;
    seg.packedStart = packed;
    if (g.repeat > 1) bits |= magnitude(g.stride);
    for (size_t i = at, end = at + static_cast<size_t>(seg.numPieces); i < end; ++i) {
      Piece& p = c.pieces[i];
      const int64_t e = p.elements();
      p.packedStart = seg.repBytes;
      seg.repBytes += p.block * e;
      bits |= magnitude(p.offset) | magnitude(p.block);
      for (int k = 0; k < p.nd; ++k) bits |= magnitude(p.stride[k]);
      int64_t eb = 0;
      if (blocks <= kExactBlocks && (!mulOk(e, g.repeat, &eb) || !addOk(blocks, eb, &blocks)))
        blocks = kExactBlocks + 1;
    }
    at += static_cast<size_t>(seg.numPieces);
    packed += seg.repBytes * seg.repeat;
    c.segments.push_back(seg);
  }
  if (runs && !single) c.exact = blocks <= kExactBlocks;
  if (packed != c.size)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "tether_type_commit: canonical form holds %lld bytes, type size is %lld",
                static_cast<long long>(packed), static_cast<long long>(c.size));
  c.width = 16;
  while (c.width > 1 && (bits & static_cast<uint64_t>(c.width - 1)) != 0) c.width /= 2;
  *out = std::move(c);
  return Status::ok();
}

std::string describe(const Canonical& c) {
  std::string s = strprintf("w%d size %lld ext %lld%s |", c.width, static_cast<long long>(c.size),
                            static_cast<long long>(c.extent), c.exact ? "" : " (structural)");
  for (const Segment& g : c.segments) {
    if (g.repeat > 1) s += strprintf(" x%lld@%lld", static_cast<long long>(g.repeat), static_cast<long long>(g.stride));
    s += " {";
    for (int64_t i = g.firstPiece; i < g.firstPiece + g.numPieces; ++i) {
      const Piece& p = c.pieces[i];
      s += strprintf(" [%lld+%lld", static_cast<long long>(p.offset), static_cast<long long>(p.block));
      for (int k = 0; k < p.nd; ++k)
        s += strprintf(" %lldx%lld", static_cast<long long>(p.count[k]), static_cast<long long>(p.stride[k]));
      s += "]";
    }
    s += " }";
  }
  return s;
}

}  // namespace tether::dt
