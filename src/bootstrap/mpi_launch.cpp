// tether_init_mpi's job set-up (bootstrap.h mpiJob): rank and size from an MPI communicator, rank 0's rendezvous
// offer broadcast over it. libmpi is looked up at run time (no link dependency); see bootstrap.h for what is
// supported. Only the offer crosses MPI; the TCP bootstrap does every tether collective (offer.h says why).
#include <dlfcn.h>
#include <time.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "bootstrap/offer.h"

namespace tether {
namespace {

// Libraries an MPI program may have loaded without exporting their symbols globally (e.g. mpi4py's RTLD_LOCAL).
// Only already-loaded ones are taken (RTLD_NOLOAD): a freshly loaded MPI would not be initialised.
constexpr const char* kMpiLibraries[] = {"libmpi.so.40", "libmpich.so.12", "libmpi.so.12", "libmpi.so"};

// Where the MPI symbols come from: the global scope, or one loaded library.
struct MpiLib {
  void* scope = RTLD_DEFAULT;
  void* handle = nullptr;  // dlopen'ed with RTLD_NOLOAD (a reference to drop), or null for the global scope
  std::string where = "the process's global symbols";
  MpiLib() = default;
  MpiLib(const MpiLib&) = delete;
  MpiLib& operator=(const MpiLib&) = delete;
  ~MpiLib() {
    if (handle) ::dlclose(handle);
  }
  void* sym(const char* name) const { return ::dlsym(scope, name); }
};

Status findMpi(MpiLib* lib) {
  if (::dlsym(RTLD_DEFAULT, "MPI_Comm_rank")) return Status::ok();
  for (const char* name : kMpiLibraries) {
    void* h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (h && ::dlsym(h, "MPI_Comm_rank")) {
      lib->scope = lib->handle = h;
      lib->where = name;
      return Status::ok();
    }
    if (h) ::dlclose(h);
  }
  TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
              "tether_init_mpi: no MPI library is loaded in this process (looked for MPI_Comm_rank among global "
              "symbols and in libmpi.so.40, libmpich.so.12, libmpi.so.12): link the program with MPI and call "
              "MPI_Init first");
}

template <typename F>
Status need(const MpiLib& lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(lib.sym(name));
  if (!*out)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "tether_init_mpi: %s not found in %s (an MPI-3 library is needed)", name,
                lib.where.c_str());
  return Status::ok();
}

Status mpiCall(const char* what, int rc) {
  if (rc != 0) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "tether_init_mpi: %s returned MPI error %d", what, rc);
  return Status::ok();
}

// One MPI ABI: H is the handle type of MPI_Comm, MPI_Datatype and MPI_Request (int for MPICH's ABI, a pointer for
// Open MPI's); byte is MPI_BYTE, statusIgnore MPI_STATUS_IGNORE.
template <typename H>
struct MpiAbi {
  using CommInt = int (*)(H, int*);
  using Ibcast = int (*)(void*, int, H, int, H, H*);
  using Test = int (*)(H*, int*, void*);
  H comm;
  H byte;
  void* statusIgnore;
  CommInt commRank = nullptr, commSize = nullptr;
  Ibcast ibcast = nullptr;
  Test test = nullptr;

  Status load(const MpiLib& lib) {
    TETHER_TRY(need(lib, "MPI_Comm_rank", &commRank));
    TETHER_TRY(need(lib, "MPI_Comm_size", &commSize));
    TETHER_TRY(need(lib, "MPI_Ibcast", &ibcast));
    return need(lib, "MPI_Test", &test);
  }

  // Rank 0's block to every rank, bounded by timeoutSeconds. MPI gets a buffer of its own: after a timeout the
  // request stays pending (a collective cannot be cancelled) and MPI may still write into that buffer, so it is then
  // left allocated (kOfferBytes, once per failed init) rather than freed under MPI.
  Status broadcast(char* block, double timeoutSeconds, int rank) const {
    std::unique_ptr<char[]> buffer(new char[kOfferBytes]);
    std::memcpy(buffer.get(), block, kOfferBytes);
    H request{};
    TETHER_TRY(mpiCall("MPI_Ibcast", ibcast(buffer.get(), static_cast<int>(kOfferBytes), byte, 0, comm, &request)));
    Deadline deadline(timeoutSeconds);
    long sleepNs = 1000;
    while (true) {
      int done = 0;
      TETHER_TRY(mpiCall("MPI_Test", test(&request, &done, statusIgnore)));
      if (done) {
        std::memcpy(block, buffer.get(), kOfferBytes);
        return Status::ok();
      }
      if (deadline.expired()) {
        (void)buffer.release();  // MPI may still write it (above)
        TETHER_FAIL(TETHER_ERR_TIMEOUT,
                    "tether_init_mpi: rank %d: the rendezvous broadcast from rank 0 did not complete within %g s "
                    "(TETHER_TIMEOUT): does every rank of the communicator call tether_init_mpi? (the MPI request "
                    "stays pending)", rank, timeoutSeconds);
      }
      timespec ts{0, sleepNs};
      ::nanosleep(&ts, nullptr);
      if (sleepNs < 1000000) sleepNs *= 2;
    }
  }

  Status job(const Config& config, double timeoutSeconds, JobInfo* out) const {
    JobInfo j;
    j.launcher = "mpi";
    TETHER_TRY(mpiCall("MPI_Comm_rank", commRank(comm, &j.rank)));
    TETHER_TRY(mpiCall("MPI_Comm_size", commSize(comm, &j.size)));
    if (j.size < 1 || j.rank < 0 || j.rank >= j.size)
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "tether_init_mpi: MPI gave rank %d of %d", j.rank, j.size);
    if (j.size > 1) {
      const int rank = j.rank;
      TETHER_TRY(exchangeOffer(config, "MPI",
                               [this, timeoutSeconds, rank](char* block) {
                                 return broadcast(block, timeoutSeconds, rank);
                               },
                               &j));
    }
    *out = std::move(j);
    return Status::ok();
  }
};

// MPICH's ABI constants (mpi.h of MPICH and its derivatives).
constexpr int kMpichByte = 0x4c00010d;
void* const kMpichStatusIgnore = reinterpret_cast<void*>(1);

std::string libraryVersion(const MpiLib& lib) {
  using GetVersion = int (*)(char*, int*);
  auto get = reinterpret_cast<GetVersion>(lib.sym("MPI_Get_library_version"));
  if (!get) return "(no MPI_Get_library_version)";
  std::vector<char> text(8192, 0);  // MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH, 256 in Open MPI
  int len = 0;
  if (get(text.data(), &len) != 0) return "(MPI_Get_library_version failed)";
  std::string s(text.data());
  size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

bool mpichAbi(const std::string& version) {
  for (const char* family : {"MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"})
    if (version.find(family) != std::string::npos) return true;
  return false;
}

}  // namespace

Status mpiJob(const Config& config, const void* comm, double timeoutSeconds, JobInfo* out) {
  if (!comm) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init_mpi: comm is NULL (pass &comm, e.g. &MPI_COMM_WORLD)");
  if (!(timeoutSeconds > 0)) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init_mpi: timeout %g s", timeoutSeconds);
  MpiLib lib;
  TETHER_TRY(findMpi(&lib));
  using Flag = int (*)(int*);
  Flag initialized = nullptr, finalized = nullptr;
  TETHER_TRY(need(lib, "MPI_Initialized", &initialized));
  TETHER_TRY(need(lib, "MPI_Finalized", &finalized));
  int isInit = 0, isFinal = 0;
  TETHER_TRY(mpiCall("MPI_Initialized", initialized(&isInit)));
  TETHER_TRY(mpiCall("MPI_Finalized", finalized(&isFinal)));
  if (!isInit) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init_mpi: MPI is not initialised; call MPI_Init first");
  if (isFinal) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init_mpi: MPI is already finalized");

  const std::string version = libraryVersion(lib);
  if (void* ompiByte = lib.sym("ompi_mpi_byte")) {
    MpiAbi<void*> abi{*static_cast<void* const*>(comm), ompiByte, nullptr};
    TETHER_TRY(abi.load(lib));
    TETHER_LOG_INFO(LogSys::Bootstrap, "tether_init_mpi: Open MPI ABI (%s)", version.c_str());
    return abi.job(config, timeoutSeconds, out);
  }
  if (mpichAbi(version)) {
    MpiAbi<int> abi{*static_cast<const int*>(comm), kMpichByte, kMpichStatusIgnore};
    TETHER_TRY(abi.load(lib));
    TETHER_LOG_INFO(LogSys::Bootstrap, "tether_init_mpi: MPICH ABI (%s)", version.c_str());
    return abi.job(config, timeoutSeconds, out);
  }
  TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
              "tether_init_mpi: MPI library '%s' (%s) has an ABI tether does not know; supported are Open MPI and "
              "MPICH's (MPICH, Intel MPI, MVAPICH, Cray MPICH)", version.c_str(), lib.where.c_str());
}

}  // namespace tether
