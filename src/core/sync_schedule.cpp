#include "core/sync_schedule.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>

namespace tether {
namespace {

int ceilLog2(size_t n) {
  int r = 0;
  while ((size_t{1} << r) < n) ++r;
  return r;
}

// The dissemination among `members` (team numbers) as seen by members[pos], on words word0, word0 + 1, ...
void disseminate(const std::vector<int>& members, size_t pos, int word0, std::vector<SyncStep>* out) {
  const size_t n = members.size();
  for (size_t r = 0, d = 1; d < n; ++r, d <<= 1)
    out->push_back(SyncStep{word0 + static_cast<int>(r), members[(pos + d) % n], members[(pos + n - d) % n]});
}

}  // namespace

std::vector<std::vector<int>> groupByHost(const std::vector<int>& host) {
  std::vector<std::vector<int>> groups;
  std::unordered_map<int, size_t> groupOf;
  for (size_t m = 0; m < host.size(); ++m) {
    auto it = groupOf.emplace(host[m], groups.size()).first;
    if (it->second == groups.size()) groups.emplace_back();
    groups[it->second].push_back(static_cast<int>(m));
  }
  return groups;
}

SyncSchedule SyncSchedule::make(const std::vector<int>& host, int me, int maxWords, bool byHost) {
  const size_t n = host.size();
  const std::vector<std::vector<int>> groups = groupByHost(host);
  size_t largest = 0;
  for (const auto& g : groups) largest = std::max(largest, g.size());
  const int a = ceilLog2(largest), b = ceilLog2(groups.size());
  SyncSchedule s;
  if (!byHost || groups.size() < 2 || largest < 2 || a + b + 1 > maxWords) {
    std::vector<int> all(n);
    for (size_t m = 0; m < n; ++m) all[m] = static_cast<int>(m);
    disseminate(all, static_cast<size_t>(me), 0, &s.steps);
    s.wordsUsed = ceilLog2(n);
    return s;
  }
  s.byHost = true;
  s.wordsUsed = a + b + 1;
  size_t g = 0;  // this member's host
  while (host[static_cast<size_t>(groups[g][0])] != host[static_cast<size_t>(me)]) ++g;
  const std::vector<int>& mine = groups[g];
  const size_t pos = static_cast<size_t>(std::find(mine.begin(), mine.end(), me) - mine.begin());
  disseminate(mine, pos, 0, &s.steps);
  const int release = a + b;
  if (pos != 0) {
    s.steps.push_back(SyncStep{release, -1, mine[0]});
    return s;
  }
  std::vector<int> leaders;
  for (const auto& h : groups) leaders.push_back(h[0]);
  disseminate(leaders, g, a, &s.steps);
  for (size_t k = 1; k < mine.size(); ++k) s.steps.push_back(SyncStep{release, mine[k], -1});
  return s;
}

}  // namespace tether
