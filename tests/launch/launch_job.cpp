// A job started by a foreign launcher with no tether address: under a PMIx launcher through tether_init (built
// without MPI), or from MPI_COMM_WORLD through tether_init_mpi (built with LAUNCH_WITH_MPI against one MPI).
// Each round: init, the position matches the launcher's (OMPI_COMM_WORLD_* / PMIX_RANK, or MPI_Comm_rank/size),
// a ring put and get on the symmetric heap, a barrier, finalize; four rounds (each re-init must take a fresh
// rendezvous, and under PMIx stay in step with the server's fences: PMIx finalized after each init desynchronised
// them, a rank waiting alone in the second round's fence, in 2 of 7 runs on a loaded 2-core machine).
// With MPI, the bad calls first: before MPI_Init, a NULL comm, an attribute that also sets rank. With MPI and the
// arguments "absent R": rank R does not call tether_init_mpi; every other rank must fail within a few TETHER_TIMEOUTs
// (R = 0: the offer's MPI_Ibcast times out; R > 0: the TCP rendezvous does), then R joins the broadcast late so MPI
// can finish.
// Prints "launch_job ok <pe>/<n>" per PE; exit status non-zero on any failure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <chrono>
#include <thread>

#include "tether/tether.h"
#ifdef LAUNCH_WITH_MPI
#include <mpi.h>
#endif

namespace {

int failures = 0;

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::fprintf(stderr, "launch_job FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                            \
      std::fprintf(stderr, "\n");                                   \
      ++failures;                                                   \
    }                                                               \
  } while (0)

tether_status_t init(tether_t* w) {
#ifdef LAUNCH_WITH_MPI
  MPI_Comm comm = MPI_COMM_WORLD;
  return tether_init_mpi(&comm, nullptr, w);
#else
  return tether_init(w);
#endif
}

void expectedPosition(int* pe, int* n) {
#ifdef LAUNCH_WITH_MPI
  MPI_Comm_rank(MPI_COMM_WORLD, pe);
  MPI_Comm_size(MPI_COMM_WORLD, n);
#else
  auto envInt = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : -1;
  };
  *pe = envInt("OMPI_COMM_WORLD_RANK") >= 0 ? envInt("OMPI_COMM_WORLD_RANK") : envInt("PMIX_RANK");
  *n = envInt("OMPI_COMM_WORLD_SIZE");
#endif
}

constexpr int kRounds = 4;  // init/finalize cycles of one process (see the top)

void runRound(int r) {
  tether_t w = nullptr;
  tether_status_t s = init(&w);
  CHECK(s == TETHER_SUCCESS, "round %d init: %s", r, tether_last_error());
  if (s != TETHER_SUCCESS) return;
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  int wantPe = -1, wantN = -1;
  expectedPosition(&wantPe, &wantN);
  CHECK(me == wantPe, "round %d: my_pe %d, launcher says %d", r, me, wantPe);
  CHECK(wantN < 0 || n == wantN, "round %d: n_pes %d, launcher says %d", r, n, wantN);
  CHECK(tether_local_pe(w) >= 0 && tether_local_pe(w) < tether_local_size(w), "round %d: local %d of %d", r,
        tether_local_pe(w), tether_local_size(w));
  long* cell = nullptr;
  CHECK(tether_malloc(w, 2 * sizeof(long), reinterpret_cast<void**>(&cell)) == TETHER_SUCCESS, "malloc: %s",
        tether_last_error());
  if (cell) {
    cell[0] = cell[1] = -1;
    CHECK(tether_barrier_all(w) == TETHER_SUCCESS, "barrier: %s", tether_last_error());
    const long mine = 1000L * r + me;
    CHECK(tether_put(w, &cell[0], &mine, sizeof mine, (me + 1) % n) == TETHER_SUCCESS, "put: %s",
          tether_last_error());
    CHECK(tether_barrier_all(w) == TETHER_SUCCESS, "barrier: %s", tether_last_error());
    CHECK(cell[0] == 1000L * r + (me + n - 1) % n, "round %d: PE %d got %ld from its left neighbour", r, me, cell[0]);
    long got = -1;
    CHECK(tether_get(w, &got, &cell[0], sizeof got, (me + 1) % n) == TETHER_SUCCESS, "get: %s", tether_last_error());
    CHECK(got == mine, "round %d: PE %d read %ld back from its right neighbour, wrote %ld", r, me, got, mine);
    CHECK(tether_barrier_all(w) == TETHER_SUCCESS, "barrier: %s", tether_last_error());
    CHECK(tether_free(w, cell) == TETHER_SUCCESS, "free: %s", tether_last_error());
  }
  CHECK(tether_finalize(w) == TETHER_SUCCESS, "finalize: %s", tether_last_error());
  if (r == kRounds - 1 && failures == 0) std::printf("launch_job ok %d/%d\n", me, n);
}

void absentRank(int absent) {
  int me = -1, n = -1;
  expectedPosition(&me, &n);
  const char* t = std::getenv("TETHER_TIMEOUT");
  const double timeout = t ? std::atof(t) : 0;
  CHECK(timeout > 0 && timeout <= 10, "absent mode wants a short TETHER_TIMEOUT, got '%s'", t ? t : "");
  if (me == absent) {
    // Late: after the others' TETHER_TIMEOUT. offer.h kOfferBytes; non-blocking, as a blocking broadcast does not
    // match the others' MPI_Ibcast.
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 2));
#ifdef LAUNCH_WITH_MPI
    std::vector<char> late(2048);
    MPI_Request request;
    MPI_Ibcast(late.data(), static_cast<int>(late.size()), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
#endif
    std::printf("launch_job ok %d absent\n", me);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  tether_t w = nullptr;
  const tether_status_t s = init(&w);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(s != TETHER_SUCCESS && w == nullptr, "rank %d: init without rank %d returned %d", me, absent, s);
  CHECK(took < 3 * timeout + 5, "rank %d: the failure took %.1f s with TETHER_TIMEOUT=%g", me, took, timeout);
  // The address came from rank 0 over PMIx/MPI: the advice must not send the user to TETHER_BOOTSTRAP_ADDR.
  CHECK(!std::strstr(tether_last_error(), "TETHER_BOOTSTRAP_ADDR"), "rank %d: misleading advice: %s", me,
        tether_last_error());
  std::fprintf(stderr, "rank %d failed as expected after %.1f s: %s\n", me, took, tether_last_error());
  if (failures == 0) std::printf("launch_job ok %d absent\n", me);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef LAUNCH_WITH_MPI
  tether_t w = nullptr;
  MPI_Comm world = MPI_COMM_WORLD;
  CHECK(tether_init_mpi(&world, nullptr, &w) == TETHER_ERR_INVALID_ARG &&
            std::strstr(tether_last_error(), "MPI_Init"),
        "before MPI_Init: %s", tether_last_error());
  MPI_Init(&argc, &argv);
  CHECK(tether_init_mpi(nullptr, nullptr, &w) == TETHER_ERR_INVALID_ARG, "NULL comm: %s", tether_last_error());
  tether_init_attr_t attr;
  tether_init_attr_default(&attr);
  attr.rank = 0;
  attr.size = 1;
  CHECK(tether_init_mpi(&world, &attr, &w) == TETHER_ERR_INVALID_ARG && w == nullptr, "attr with rank: %s",
        tether_last_error());
  if (argc > 2 && std::strcmp(argv[1], "absent") == 0) {
    absentRank(std::atoi(argv[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
  }
#else
  if (argc > 2 && std::strcmp(argv[1], "absent") == 0) {
    absentRank(std::atoi(argv[2]));
    return failures == 0 ? 0 : 1;
  }
#endif
  for (int r = 0; r < kRounds; ++r) runRound(r);
#ifdef LAUNCH_WITH_MPI
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
#endif
  return failures == 0 ? 0 : 1;
}
