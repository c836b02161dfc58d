// launcher_probe: a PE for tetherrun's tests. Runs its arguments as actions, in order; an action with a suffix
// "@R" runs on rank R only. Exits 0 after the last action unless an action ends it.
//
//   info            print "rank=.. size=.. local_rank=.. local_size=.. addr=.. secret=.. launcher=.. fd=.. pid=.."
//   env=NAME        print "NAME=<value>" (or "NAME unset")
//   lines=N         print N lines "out <i> rank <r>" to stdout;  errlines=N: "err <i> rank <r>" to stderr
//   partial=TEXT    write TEXT to stdout without a newline
//   sleep=SEC       sleep (fractions allowed)
//   exit=CODE       exit with CODE
//   signal=SIG      raise signal number SIG
//   ignoreterm      ignore SIGTERM from now on
//   checkfd         rank 0 alone has TETHER_BOOTSTRAP_FD, a listening socket on TETHER_BOOTSTRAP_ADDR's port, and no
//                   rank holds any other socket (tetherrun's fds are close-on-exec); exits 1 naming the problem
//   bootstrap       detectJob + TCP bootstrap + allgather of ranks and broadcast of rank 0's secret; prints
//                   "bootstrap ok rank=R size=S launcher=L"
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/launcher_env.h"

namespace {

const char* envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "launcher_probe (rank %s): %s\n", envOr("TETHER_RANK", "?"), msg.c_str());
  std::exit(1);
}

bool isSocket(int fd) {
  char link[64], target[256];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  return std::strncmp(target, "socket:", 7) == 0;
}

void checkFd(int rank) {
  const char* fdVar = std::getenv("TETHER_BOOTSTRAP_FD");
  int fd = -1;
  if (rank == 0) {
    if (!fdVar) fail("PE 0 has no TETHER_BOOTSTRAP_FD");
    fd = std::atoi(fdVar);
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
      fail("TETHER_BOOTSTRAP_FD=" + std::string(fdVar) + " is not a listening socket");
    sockaddr_in sa{};
    len = sizeof sa;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) fail("getsockname failed");
    std::string addr = envOr("TETHER_BOOTSTRAP_ADDR", "");
    std::string want = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    if (addr != want) fail("TETHER_BOOTSTRAP_ADDR=" + addr + " but the inherited socket is " + want);
  } else if (fdVar) {
    fail("PE " + std::to_string(rank) + " has TETHER_BOOTSTRAP_FD=" + fdVar);
  }
  DIR* d = opendir("/proc/self/fd");
  if (!d) fail("cannot list /proc/self/fd");
  std::vector<int> fds;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') fds.push_back(std::atoi(e->d_name));
  closedir(d);
  for (int f : fds)
    if (f != fd && isSocket(f)) fail("inherited an unexpected socket fd " + std::to_string(f));
  std::printf("checkfd ok rank=%d\n", rank);
}

void bootstrapAction(int rank) {
  using namespace tether;
  Config config = Config::fromEnvironment();
  JobInfo job;
  Status s = detectJob(config, &job);
  if (!s.isOk()) fail("detectJob: " + s.message());
  if (job.rank != rank) fail("detectJob gave rank " + std::to_string(job.rank));
  std::unique_ptr<Bootstrap> bs;
  s = createTcpBootstrap(job, 30, &bs);
  if (!s.isOk()) fail("createTcpBootstrap: " + s.message());
  std::vector<int> ranks(static_cast<size_t>(job.size), -1);
  s = bs->allgather(&job.rank, ranks.data(), sizeof(int));
  if (!s.isOk()) fail("allgather: " + s.message());
  for (int r = 0; r < job.size; ++r)
    if (ranks[static_cast<size_t>(r)] != r) fail("allgather: block " + std::to_string(r) + " is wrong");
  char secret[128] = {};
  if (rank == 0) std::snprintf(secret, sizeof secret, "%s", job.secret.c_str());
  s = bs->broadcast(secret, sizeof secret, 0);
  if (!s.isOk()) fail("broadcast: " + s.message());
  if (job.secret != secret) fail("broadcast: rank 0's secret differs from mine");
  s = bs->barrier();
  if (!s.isOk()) fail("barrier: " + s.message());
  std::printf("bootstrap ok rank=%d size=%d launcher=%s\n", job.rank, job.size, job.launcher.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = std::atoi(envOr("TETHER_RANK", "-1"));
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t at = a.rfind('@');
    if (at != std::string::npos) {
      if (std::atoi(a.c_str() + at + 1) != rank) continue;
      a = a.substr(0, at);
    }
    size_t eq = a.find('=');
    std::string name = a.substr(0, eq), arg = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (name == "info") {
      std::printf("rank=%s size=%s local_rank=%s local_size=%s addr=%s secret=%s launcher=%s fd=%s pid=%d\n",
                  envOr("TETHER_RANK", "-"), envOr("TETHER_SIZE", "-"), envOr("TETHER_LOCAL_RANK", "-"),
                  envOr("TETHER_LOCAL_SIZE", "-"), envOr("TETHER_BOOTSTRAP_ADDR", "-"),
                  envOr("TETHER_JOB_SECRET", "-"), envOr("TETHER_LAUNCHER", "-"), envOr("TETHER_BOOTSTRAP_FD", "-"),
                  static_cast<int>(getpid()));
    } else if (name == "env") {
      const char* v = std::getenv(arg.c_str());
      if (v) std::printf("%s=%s\n", arg.c_str(), v);
      else std::printf("%s unset\n", arg.c_str());
    } else if (name == "lines") {
      for (int k = 0, n = std::atoi(arg.c_str()); k < n; ++k) std::printf("out %d rank %d\n", k, rank);
    } else if (name == "errlines") {
      for (int k = 0, n = std::atoi(arg.c_str()); k < n; ++k) std::fprintf(stderr, "err %d rank %d\n", k, rank);
    } else if (name == "partial") {
      std::printf("%s", arg.c_str());
    } else if (name == "sleep") {
      std::fflush(stdout);
      usleep(static_cast<useconds_t>(std::atof(arg.c_str()) * 1e6));
    } else if (name == "exit") {
      std::fflush(stdout);
      std::_Exit(std::atoi(arg.c_str()));
    } else if (name == "signal") {
      std::fflush(stdout);
      raise(std::atoi(arg.c_str()));
    } else if (name == "ignoreterm") {
      signal(SIGTERM, SIG_IGN);
    } else if (name == "checkfd") {
      checkFd(rank);
    } else if (name == "bootstrap") {
      bootstrapAction(rank);
    } else {
      fail("unknown action '" + a + "'");
    }
    std::fflush(stdout);
  }
  return 0;
}
