#include "heap/program_data.h"

#include <link.h>
#include <unistd.h>

namespace tether {
namespace {

struct Found {
  uintptr_t lo = 0, hi = 0;          // writable PT_LOAD, [lo, hi)
  uintptr_t relroLo = 0, relroHi = 0;
  bool done = false;
};

int visit(dl_phdr_info* info, size_t, void* arg) {
  auto* f = static_cast<Found*>(arg);
  if (f->done) return 1;
  f->done = true;  // the first object reported is the main program
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && f->hi == 0) {
      f->lo = start;
      f->hi = start + ph.p_memsz;
    } else if (ph.p_type == PT_GNU_RELRO) {
      f->relroLo = start;
      f->relroHi = start + ph.p_memsz;
    }
  }
  return 1;
}

}  // namespace

Status programDataRange(void** addr, uint64_t* bytes) {
  Found f;
  dl_iterate_phdr(visit, &f);
  if (f.hi == 0) TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "the program has no writable data segment");
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t lo = f.lo;
  if (f.relroHi > lo && f.relroLo <= lo) lo = f.relroHi;  // RELRO is at the start of the writable segment
  lo = (lo + page - 1) / page * page;                      // a page shared with RELRO stays private
  const uintptr_t hi = (f.hi + page - 1) / page * page;    // the tail of .bss owns its last page
  if (hi <= lo) TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "the program's writable data fits in its RELRO page");
  *addr = reinterpret_cast<void*>(lo);
  *bytes = hi - lo;
  return Status::ok();
}

}  // namespace tether
