// tetherrun: starts N PEs of one program on this host, gives them a rendezvous socket and a random job secret,
// forwards signals and output, and ends the job when one PE fails (DESIGN §4, Bootstrap). A job over several hosts
// is one tetherrun per host, each starting its range of ranks (--ranks) with the same --rendezvous address and job
// secret; the one holding rank 0 listens on that address and hands the socket to PE 0.
//
// Structure: parse the command line (options.h), prepare every PE's environment, fork/exec the PEs (each in its
// own process group, with PR_SET_PDEATHSIG so none outlives tetherrun), then run one poll() loop over a self-pipe
// (fed by the signal handlers: SIGCHLD and the forwarded signals) and the PEs' output pipes (output.h). The
// self-pipe's write end is the one global: signal handlers cannot reach anything else.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "tether/tether.h"
#include "options.h"
#include "output.h"

extern char** environ;

namespace {

using tether::Config;
using tether::nowNs;
using tether::Status;

using tetherrun::kExitUsage;
using tetherrun::Options;
using tetherrun::Sink;
using tetherrun::splitHostPort;
using tetherrun::Stream;

constexpr int kExitTimeout = 124;
constexpr size_t kMaxSecretBytes = 1024;  // what the bootstrap accepts (src/bootstrap/launcher_env.cpp)

int gSignalPipeWrite = -1;  // written by the signal handlers only

void onSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(gSignalPipeWrite, &b, 1);  // full pipe: a wake-up is already pending
  (void)ignored;
  errno = saved;
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// ---- helpers --------------------------------------------------------------------------------------------------

[[noreturn]] void die(const char* what, int err) {
  std::fprintf(stderr, "tetherrun: %s: %s\n", what, std::strerror(err));
  std::exit(1);
}

Status mkdirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return tether::errnoStatus("mkdir " + part, errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status(TETHER_ERR_SYSTEM, "--output-dir " + path + " is not a directory");
  return Status::ok();
}

// Sets NAME=VALUE in an environment list, replacing an earlier NAME.
void setEnv(std::vector<std::string>* env, const std::string& assignment) {
  std::string prefix = assignment.substr(0, assignment.find('=') + 1);
  env->erase(std::remove_if(env->begin(), env->end(),
                            [&](const std::string& e) { return e.compare(0, prefix.size(), prefix) == 0; }),
             env->end());
  env->push_back(assignment);
}

std::string randomSecret() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t k = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    got += static_cast<size_t>(k);
  }
  if (got < sizeof bytes) {
    int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open /dev/urandom", errno);
    while (got < sizeof bytes) {
      ssize_t k = ::read(fd, bytes + got, sizeof bytes - got);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) die("read /dev/urandom", k < 0 ? errno : EIO);
      got += static_cast<size_t>(k);
    }
    ::close(fd);
  }
  static const char hex[] = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

struct Pe {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  Stream out, err;
  Sink fileOut, fileErr;  // --output-dir with --tag-output
};

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return tether::strprintf("exited with status %d", WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  return tether::strprintf("was killed by signal %d (%s)", sig, strsignal(sig));
}

int exitCodeOf(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

class Launcher {
 public:
  Launcher(Options o, double grace)
      : opt_(std::move(o)), grace_(grace), pes_(static_cast<size_t>(opt_.last - opt_.first + 1)) {}
  int run();

 private:
  void setUpSignals();
  void openListener();
  void openRendezvousListener();
  std::string chooseSecret(const std::vector<std::string>& baseEnv) const;
  void spawn(Pe& pe, const std::vector<std::string>& baseEnv, const std::string& secret);
  void signalRunning(int sig);
  void startStopping();
  void reap();
  void onSignalByte(int sig);
  void readControl();
  void onControlLine(const std::string& line);
  int runningCount() const {
    int n = 0;
    for (const auto& pe : pes_) n += pe.running ? 1 : 0;
    return n;
  }

  Options opt_;
  double grace_;
  std::vector<Pe> pes_;
  Sink stdoutSink_{1, false}, stderrSink_{2, false};
  int signalPipeRead_ = -1;
  int listenFd_ = -1;
  int controlRead_ = -1, controlWrite_ = -1;  // the PEs' TETHER_CONTROL_FD pipe (write end inherited by every PE)
  std::string controlPartial_;                // bytes after the last newline read from it
  int port_ = 0;
  std::string addr_;  // TETHER_BOOTSTRAP_ADDR of every PE
  sigset_t oldMask_;
  rlimit oldNoFile_{};  // restored in the PEs (tetherrun raises its own limit for 2 pipes per PE)
  int exitCode_ = -1;          // -1: nothing failed yet
  bool stopping_ = false;      // SIGTERM sent (or forwarded a terminating signal)
  uint64_t killAtNs_ = 0;      // when to SIGKILL the remaining PEs; 0: not scheduled
};

void Launcher::setUpSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) die("pipe2", errno);
  signalPipeRead_ = fds[0];
  gSignalPipeWrite = fds[1];
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kForwarded) ::sigaction(sig, &sa, nullptr);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Without --rendezvous: a free port on 127.0.0.1 (the job stays on this host); with it: the given address, opened
// here only when this tetherrun starts rank 0 (the others connect to it).
void Launcher::openListener() {
  if (!opt_.rendezvous.empty()) {
    addr_ = opt_.rendezvous;
    if (opt_.first == 0) openRendezvousListener();
    return;
  }
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) die("socket", errno);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;  // the kernel picks a free port: no race with other jobs
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) die("bind 127.0.0.1:0", errno);
  if (::listen(listenFd_, SOMAXCONN) != 0) die("listen", errno);
  socklen_t len = sizeof sa;
  if (::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) die("getsockname", errno);
  port_ = ntohs(sa.sin_port);
  addr_ = "127.0.0.1:" + std::to_string(port_);
}

// The rule of the bootstrap's own listener (tcp_bootstrap.cpp): a loopback address keeps the job on this host,
// any other listens on every interface on that port (the name may resolve to another interface's address).
void Launcher::openRendezvousListener() {
  std::string host;
  int port = 0;
  (void)splitHostPort(opt_.rendezvous, &host, &port);  // checked when parsed
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    std::fprintf(stderr, "tetherrun: cannot resolve the --rendezvous host '%s' to an IPv4 address: %s\n", host.c_str(),
                 rc != 0 ? ::gai_strerror(rc) : "no result");
    std::exit(1);
  }
  sockaddr_in sa{};
  std::memcpy(&sa, res->ai_addr, sizeof sa);
  ::freeaddrinfo(res);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) die("socket", errno);
  int one = 1;
  (void)::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(listenFd_, SOMAXCONN) != 0) {
    int err = errno;
    const char* where = sa.sin_addr.s_addr == htonl(INADDR_ANY) ? "every interface" : host.c_str();
    std::fprintf(stderr, "tetherrun: rank 0 cannot listen on %s (--rendezvous, port %d on %s): %s%s\n",
                 opt_.rendezvous.c_str(), port, where, std::strerror(err),
                 err == EADDRINUSE ? "; choose another port, the same on every host" : "");
    std::exit(1);
  }
  port_ = port;
}

// The first line of a --secret-file, without trailing white space.
Status readSecretFile(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return tether::errnoStatus("--secret-file " + path, errno ? errno : ENOENT);
  std::string line;
  std::getline(f, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty())
    return Status(TETHER_ERR_INVALID_ARG, "--secret-file " + path + ": the first line is empty (expected the secret)");
  if (line.size() > kMaxSecretBytes)
    return Status(TETHER_ERR_INVALID_ARG, tether::strprintf("--secret-file %s: the secret is %zu bytes; at most %zu",
                                                            path.c_str(), line.size(), kMaxSecretBytes));
  *out = line;
  return Status::ok();
}

// A job on this host alone gets a fresh random secret; a job over several hosts needs the same one everywhere:
// --secret-file, else TETHER_JOB_SECRET from the environment (or -x). Exits with a usage error when there is none.
std::string Launcher::chooseSecret(const std::vector<std::string>& baseEnv) const {
  if (opt_.rendezvous.empty()) return randomSecret();
  std::string secret;
  if (!opt_.secretFile.empty()) {
    Status s = readSecretFile(opt_.secretFile, &secret);
    if (!s.isOk()) {
      std::fprintf(stderr, "tetherrun: %s\n", s.message().c_str());
      std::exit(kExitUsage);
    }
    return secret;
  }
  const std::string prefix = "TETHER_JOB_SECRET=";
  for (const auto& e : baseEnv)
    if (e.compare(0, prefix.size(), prefix) == 0) secret = e.substr(prefix.size());
  if (secret.empty() || secret.size() > kMaxSecretBytes) {
    std::fprintf(stderr,
                 "tetherrun: --rendezvous %s: every host must present the same job secret; give --secret-file F (the "
                 "same content on every host) or export TETHER_JOB_SECRET (1..%zu bytes)%s\n",
                 opt_.rendezvous.c_str(), kMaxSecretBytes, secret.empty() ? "" : "; it is too long");
    std::exit(kExitUsage);
  }
  return secret;
}

void Launcher::spawn(Pe& pe, const std::vector<std::string>& baseEnv, const std::string& secret) {
  // Everything the child needs is built before fork().
  std::vector<std::string> env = baseEnv;
  const int r = pe.rank;
  setEnv(&env, "TETHER_RANK=" + std::to_string(r));
  setEnv(&env, "TETHER_SIZE=" + std::to_string(opt_.np));
  setEnv(&env, "TETHER_LOCAL_RANK=" + std::to_string(r - opt_.first));
  setEnv(&env, "TETHER_LOCAL_SIZE=" + std::to_string(pes_.size()));
  setEnv(&env, "TETHER_BOOTSTRAP_ADDR=" + addr_);
  setEnv(&env, "TETHER_JOB_SECRET=" + secret);
  setEnv(&env, "TETHER_LAUNCHER=tetherrun");
  if (r == 0 && listenFd_ >= 0) setEnv(&env, "TETHER_BOOTSTRAP_FD=" + std::to_string(listenFd_));
  setEnv(&env, "TETHER_CONTROL_FD=" + std::to_string(controlWrite_));
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(&e[0]);
  envp.push_back(nullptr);
  for (auto& a : opt_.argv) argv.push_back(&a[0]);
  argv.push_back(nullptr);

  int childOut = -1, childErr = -1, childIn = -1;
  if (opt_.tagOutput) {
    int o[2], e[2];
    if (::pipe2(o, O_CLOEXEC) != 0 || ::pipe2(e, O_CLOEXEC) != 0) die("pipe2", errno);
    pe.out.fd = o[0];
    pe.err.fd = e[0];
    childOut = o[1];
    childErr = e[1];
    for (int fd : {o[0], e[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    pe.out.prefix = pe.err.prefix = "[" + std::to_string(r) + "] ";
    pe.out.sink = &stdoutSink_;
    pe.err.sink = &stderrSink_;
  }
  if (!opt_.outputDir.empty()) {
    std::string base = opt_.outputDir + "/pe" + std::to_string(r);
    int fo = ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fo < 0) die(("open " + base + ".out").c_str(), errno);
    int fe = ::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fe < 0) die(("open " + base + ".err").c_str(), errno);
    if (opt_.tagOutput) {
      pe.fileOut = Sink{fo, false};
      pe.fileErr = Sink{fe, false};
      pe.out.sink = &pe.fileOut;
      pe.err.sink = &pe.fileErr;
    } else {
      childOut = fo;
      childErr = fe;
    }
  }
  if (r != 0 || ::isatty(0)) {
    childIn = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (childIn < 0) die("open /dev/null", errno);
  }
  int execPipe[2];
  if (::pipe2(execPipe, O_CLOEXEC) != 0) die("pipe2", errno);
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) die("fork", errno);
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // tetherrun died before PDEATHSIG was armed
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : kForwarded) ::sigaction(sig, &dfl, nullptr);
    ::sigaction(SIGCHLD, &dfl, nullptr);
    ::sigaction(SIGPIPE, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
    if (oldNoFile_.rlim_max != 0) ::setrlimit(RLIMIT_NOFILE, &oldNoFile_);
    auto redirect = [](int from, int to) {
      if (from < 0) return;
      if (from == to) ::fcntl(to, F_SETFD, 0);
      else ::dup2(from, to);  // the duplicate is not close-on-exec
    };
    redirect(childIn, 0);
    redirect(childOut, 1);
    redirect(childErr, 2);
    if (r == 0 && listenFd_ >= 0) ::fcntl(listenFd_, F_SETFD, 0);
    ::fcntl(controlWrite_, F_SETFD, 0);
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = ::write(execPipe[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, signals sent after this reach the group
  pe.pid = pid;
  pe.running = true;
  for (int fd : {childOut, childErr, childIn, execPipe[1]})
    if (fd >= 0) ::close(fd);
  int execErr = 0;
  ssize_t k;
  do k = ::read(execPipe[0], &execErr, sizeof execErr);
  while (k < 0 && errno == EINTR);
  ::close(execPipe[0]);
  if (k == static_cast<ssize_t>(sizeof execErr)) {
    std::fprintf(stderr, "tetherrun: cannot run '%s' (PE %d): %s\n", opt_.argv[0].c_str(), r, std::strerror(execErr));
    ::waitpid(pid, nullptr, 0);
    pe.running = false;
    exitCode_ = (execErr == ENOENT || execErr == ENOTDIR) ? 127 : 126;
  }
}

// Signals every PE still running, and its process group (what the PE started itself).
void Launcher::signalRunning(int sig) {
  for (const auto& pe : pes_) {
    if (!pe.running) continue;
    if (::kill(-pe.pid, sig) != 0) ::kill(pe.pid, sig);
  }
}

void Launcher::startStopping() {
  if (stopping_) return;
  stopping_ = true;
  signalRunning(SIGTERM);
  killAtNs_ = nowNs() + static_cast<uint64_t>(grace_ * 1e9);
}

// Messages from the PEs, one per line. Read before every reap: a PE writes its message before it exits, so the
// message is seen before its exit status.
void Launcher::readControl() {
  while (controlRead_ >= 0) {
    char buf[4096];
    ssize_t k = ::read(controlRead_, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) {  // every PE closed it: nothing more will come (and poll would report POLLHUP forever)
      ::close(controlRead_);
      controlRead_ = -1;
    }
    if (k <= 0) return;
    controlPartial_.append(buf, static_cast<size_t>(k));
    size_t nl;
    while ((nl = controlPartial_.find('\n')) != std::string::npos) {
      onControlLine(controlPartial_.substr(0, nl));
      controlPartial_.erase(0, nl + 1);
    }
    if (controlPartial_.size() > 4096) controlPartial_.clear();  // not our protocol
  }
}

// "global_exit <pe> <status>": that PE called shmem_global_exit(status); the job ends with status.
void Launcher::onControlLine(const std::string& line) {
  int rank = -1, status = -1, used = 0;
  if (std::sscanf(line.c_str(), "global_exit %d %d%n", &rank, &status, &used) != 2 ||
      static_cast<size_t>(used) != line.size() || status < 0 || status > 255) {
    std::fprintf(stderr, "tetherrun: ignoring an unknown message from a PE: '%s'\n", line.c_str());
    return;
  }
  if (stopping_ || exitCode_ >= 0) return;  // the job is already ending with another status
  int others = 0;
  for (const auto& pe : pes_) others += pe.running && pe.rank != rank ? 1 : 0;
  std::fprintf(stderr, "tetherrun: PE %d called global exit with status %d; stopping the other %d PE%s\n", rank,
               status, others, others == 1 ? "" : "s");
  exitCode_ = status;
  startStopping();
}

void Launcher::reap() {
  readControl();
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (auto& pe : pes_) {
      if (pe.pid != pid || !pe.running) continue;
      pe.running = false;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      TETHER_LOG_DEBUG(tether::LogSys::Launcher, "PE %d (pid %d) %s", pe.rank, static_cast<int>(pid),
                       describeStatus(status).c_str());
      if (failed && !stopping_ && exitCode_ < 0) {
        int others = runningCount();
        if (others > 0)
          std::fprintf(stderr, "tetherrun: PE %d (pid %d) %s; stopping the other %d PE%s\n", pe.rank,
                       static_cast<int>(pid), describeStatus(status).c_str(), others, others == 1 ? "" : "s");
        else
          std::fprintf(stderr, "tetherrun: PE %d (pid %d) %s\n", pe.rank, static_cast<int>(pid),
                       describeStatus(status).c_str());
        exitCode_ = exitCodeOf(status);
        startStopping();
      }
    }
  }
}

void Launcher::onSignalByte(int sig) {
  if (sig == SIGCHLD) {
    reap();
    return;
  }
  int n = runningCount();
  if (!stopping_)
    std::fprintf(stderr, "tetherrun: received %s; forwarding it to %d running PE%s\n", strsignal(sig), n,
                 n == 1 ? "" : "s");
  signalRunning(sig);
  if (exitCode_ < 0) exitCode_ = 128 + sig;
  if (!stopping_) {
    stopping_ = true;
    killAtNs_ = nowNs() + static_cast<uint64_t>(grace_ * 1e9);
  }
}

int Launcher::run() {
  if (!opt_.outputDir.empty()) {
    Status s = mkdirs(opt_.outputDir);
    if (!s.isOk()) {
      std::fprintf(stderr, "tetherrun: %s\n", s.message().c_str());
      return 1;
    }
  }
  const uint64_t startNs = nowNs();
  if (::getrlimit(RLIMIT_NOFILE, &oldNoFile_) == 0) {
    rlimit raised = oldNoFile_;
    raised.rlim_cur = raised.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &raised);
  }
  // The position variables of an enclosing job are replaced in spawn(); its inherited fd must not leak to PEs 1..N-1.
  std::vector<std::string> baseEnv;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TETHER_BOOTSTRAP_FD=", 20) != 0) baseEnv.push_back(*e);
  for (const auto& a : opt_.env) setEnv(&baseEnv, a);
  const std::string secret = chooseSecret(baseEnv);
  setUpSignals();
  openListener();
  int control[2];
  if (::pipe2(control, O_CLOEXEC) != 0) die("pipe2", errno);
  controlRead_ = control[0];
  controlWrite_ = control[1];
  ::fcntl(controlRead_, F_SETFL, ::fcntl(controlRead_, F_GETFL) | O_NONBLOCK);

  sigset_t block;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigaddset(&block, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &block, &oldMask_);
  for (size_t i = 0; i < pes_.size() && exitCode_ < 0; ++i) {
    pes_[i].rank = opt_.first + static_cast<int>(i);
    spawn(pes_[i], baseEnv, secret);
  }
  if (listenFd_ >= 0) ::close(listenFd_);  // PE 0 has it; once PE 0 is gone, connecting fails at once
  ::close(controlWrite_);  // the PEs hold it
  if (exitCode_ >= 0) startStopping();  // exec failed: stop the PEs already started
  ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);

  const uint64_t jobEndNs = opt_.timeout > 0 ? startNs + static_cast<uint64_t>(opt_.timeout * 1e9) : 0;
  bool timedOut = false, killed = false;
  std::vector<pollfd> pfds;
  std::vector<Stream*> streams;
  while (runningCount() > 0) {
    const uint64_t now = nowNs();
    if (jobEndNs && !timedOut && now >= jobEndNs) {
      timedOut = true;
      int n = runningCount();
      std::fprintf(stderr, "tetherrun: job timed out after %g s (--timeout); stopping %d running PE%s\n",
                   opt_.timeout, n, n == 1 ? "" : "s");
      exitCode_ = kExitTimeout;
      if (stopping_) killAtNs_ = std::min(killAtNs_, now);
      startStopping();
    }
    if (killAtNs_ && !killed && now >= killAtNs_) {
      killed = true;
      int n = runningCount();
      std::fprintf(stderr, "tetherrun: %d PE%s still running %g s after SIGTERM; sending SIGKILL\n", n,
                   n == 1 ? "" : "s", grace_);
      signalRunning(SIGKILL);
    }
    int64_t waitMs = -1;
    auto until = [&](uint64_t t) {
      int64_t ms = t > now ? static_cast<int64_t>((t - now + 999999) / 1000000) : 0;
      waitMs = waitMs < 0 ? ms : std::min(waitMs, ms);
    };
    if (jobEndNs && !timedOut) until(jobEndNs);
    if (killAtNs_ && !killed) until(killAtNs_);

    pfds.clear();
    streams.clear();
    pfds.push_back({signalPipeRead_, POLLIN, 0});
    pfds.push_back({controlRead_, POLLIN, 0});  // fd -1 (closed at EOF): poll ignores it
    for (auto& pe : pes_)
      for (Stream* s : {&pe.out, &pe.err})
        if (s->fd >= 0) {
          pfds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
        }
    int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::min<int64_t>(waitMs, 1 << 30)));
    if (n < 0 && errno != EINTR) die("poll", errno);
    if (n <= 0) continue;
    for (size_t i = 0; i < streams.size(); ++i)
      if (pfds[i + 2].revents) streams[i]->pump();
    if (pfds[1].revents) readControl();
    if (pfds[0].revents) {
      unsigned char sigs[64];
      ssize_t k;
      while ((k = ::read(signalPipeRead_, sigs, sizeof sigs)) > 0)
        for (ssize_t j = 0; j < k; ++j) onSignalByte(sigs[j]);
    }
    reap();  // also catches a SIGCHLD whose byte found the pipe full
  }
  for (auto& pe : pes_) {
    pe.out.drain();
    pe.err.drain();
    for (Sink* s : {&pe.fileOut, &pe.fileErr})
      if (s->fd >= 0) ::close(s->fd);
  }
  return exitCode_ < 0 ? 0 : exitCode_;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = tetherrun::parseArgs(argc, argv);
  Config config = Config::fromEnvironment();
  double grace = 0;
  if (!tether::parseSeconds(config.str("TETHER_KILL_GRACE"), &grace)) {
    std::fprintf(stderr, "tetherrun: TETHER_KILL_GRACE='%s' is not a duration (e.g. 3, 500ms)\n",
                 config.str("TETHER_KILL_GRACE").c_str());
    return kExitUsage;
  }
  Launcher launcher(std::move(opt), grace);
  return launcher.run();
}
