// PMIx launch without libpmix (pmix.h): the build cannot talk to a PMIx server.
#include "bootstrap/pmix/pmix.h"

namespace tether {

bool pmixBuilt() { return false; }

Status pmixJob(const Config&, double, JobInfo*) {
  TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
              "PMIx launch: this tether was built without PMIx; install libpmix-dev (Debian/Ubuntu) or PMIx's "
              "development files and rebuild with -DTETHER_PMIX=ON, or set TETHER_BOOTSTRAP_ADDR=host:port on every "
              "rank");
}

}  // namespace tether
