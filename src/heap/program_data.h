// Where the main program's global and static variables live: the writable PT_LOAD segment of the executable
// (.data, .bss), without its leading RELRO part (made read-only after relocation), as whole pages.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace tether {

// *addr, *bytes: page-aligned range of the executable's writable data. Pages it shares with other data (the first
// page's RELRO head, if not page-aligned) are excluded, so every variable of .data/.bss lies inside the range except
// in the rare layout where one shares a page with RELRO data. Fails when the program has no writable segment.
Status programDataRange(void** addr, uint64_t* bytes);

}  // namespace tether
