// tetherrun's command line (options.h).
#include "options.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "base/config.h"
#include "tether/tether.h"

namespace tetherrun {
namespace {

const char kHelp[] =
    "Usage: tetherrun -n N [options] [--] [NAME=VALUE...] program [args...]\n"
    "       tetherrun -n N --ranks FIRST-LAST --rendezvous HOST:PORT --secret-file F [options] program [args...]\n"
    "\n"
    "Starts N processing elements (PEs) of `program` on this host and waits for them. With --ranks it starts only\n"
    "ranks FIRST..LAST of a job of N PEs: run one tetherrun per host, each with its own range, the same -n, the same\n"
    "--rendezvous and the same secret (see \"Several hosts\" below).\n"
    "\n"
    "Options:\n"
    "  -n, --np N            number of PEs of the whole job, 1..1024 (required)\n"
    "  --ranks FIRST-LAST    start ranks FIRST..LAST only (FIRST alone: one rank); 0 <= FIRST <= LAST < N;\n"
    "                        default 0-(N-1). Needs --rendezvous unless it covers the whole job\n"
    "  --rendezvous HOST:PORT  the address of rank 0's host and a port (1-65535), the same on every host; the\n"
    "                        tetherrun that starts rank 0 listens on it (on every interface unless HOST is a\n"
    "                        loopback address) and gives the socket to PE 0. Default: 127.0.0.1 and a free port\n"
    "  --secret-file F       the job secret: the first line of F (at most 1024 bytes), the same file content on every\n"
    "                        host. Without it, a job with --rendezvous takes TETHER_JOB_SECRET from the environment\n"
    "                        (or -x); without --rendezvous tetherrun makes a random one\n"
    "  --tag-output          prefix every line a PE writes to stdout/stderr with \"[rank] \"\n"
    "  --output-dir DIR      write PE r's stdout to DIR/pe<r>.out and stderr to DIR/pe<r>.err (DIR is created;\n"
    "                        with --tag-output the lines in the files are prefixed too)\n"
    "  -x, --env NAME=VALUE  export NAME=VALUE to every PE (repeatable); NAME=VALUE words before the program do the\n"
    "                        same\n"
    "  --timeout SEC         wall-clock limit for the whole job (e.g. 30, 2m); on expiry the PEs are stopped and\n"
    "                        tetherrun exits with 124\n"
    "  -h, --help            show this help\n"
    "  --version             show the version\n"
    "\n"
    "Each PE gets TETHER_RANK, TETHER_SIZE, TETHER_LOCAL_RANK, TETHER_LOCAL_SIZE (rank - FIRST and the number of\n"
    "ranks started here), TETHER_BOOTSTRAP_ADDR (127.0.0.1:<port>, or the --rendezvous address), TETHER_JOB_SECRET\n"
    "(64 random hex digits, or the given secret; the same for the whole job), TETHER_LAUNCHER=tetherrun and\n"
    "TETHER_CONTROL_FD (the write end of a pipe back to tetherrun); PE 0 also inherits the listening rendezvous\n"
    "socket as TETHER_BOOTSTRAP_FD.\n"
    "PE 0 inherits stdin unless it is a terminal; the other PEs read /dev/null.\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to every PE (and its process group). When a PE exits with a\n"
    "non-zero status or dies by a signal, tetherrun names it, sends SIGTERM to the other PEs and SIGKILL to those\n"
    "still running TETHER_KILL_GRACE seconds later (default 3); the same grace applies after a forwarded signal.\n"
    "A PE that writes \"global_exit <pe> <status>\" to TETHER_CONTROL_FD (shmem_global_exit does) ends the job the\n"
    "same way, and tetherrun then exits with <status>, 0 included.\n"
    "\n"
    "Several hosts: e.g. 8 PEs on hosts a and b (a holds rank 0), the same secret file on both:\n"
    "  a$ tetherrun -n 8 --ranks 0-3 --rendezvous a:29500 --secret-file ~/.tether-secret ./prog\n"
    "  b$ tetherrun -n 8 --ranks 4-7 --rendezvous a:29500 --secret-file ~/.tether-secret ./prog\n"
    "Start them within TETHER_TIMEOUT of each other (default 300 s). Rank 0 names the ranks that never connected;\n"
    "a rank started twice (overlapping ranges) is refused by rank 0 and fails. Each tetherrun sees only its own\n"
    "PEs: a PE lost on another host ends the others with the runtime's error (peer lost, timeout) within\n"
    "TETHER_TIMEOUT. Under srun or mpirun, do not use tetherrun: export TETHER_BOOTSTRAP_ADDR and TETHER_JOB_SECRET.\n"
    "\n"
    "Exit status: 0 when every PE exits 0; the status of a PE's global_exit when it came first; else the first\n"
    "failing PE's status (128+N for a PE killed by signal N); 128+N when tetherrun was stopped by signal N; 124 on\n"
    "--timeout; 127 (126) when the program cannot be found (executed); 2 for bad usage.\n";



bool isAssignment(const std::string& s) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (size_t i = 1; i < eq; ++i)
    if (!(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) return false;
  return true;
}

// "A-B" or "A" (decimal, A <= B, both >= 0).
bool parseRange(const std::string& s, int* first, int* last) {
  size_t dash = s.find('-');
  int64_t a = 0, b = 0;
  std::string sa = s.substr(0, dash), sb = dash == std::string::npos ? sa : s.substr(dash + 1);
  for (const std::string* part : {&sa, &sb})
    if (part->empty() || part->find_first_not_of("0123456789") != std::string::npos) return false;
  if (!tether::parseInt(sa, &a) || !tether::parseInt(sb, &b) || a > b || b >= kMaxPes) return false;
  *first = static_cast<int>(a);
  *last = static_cast<int>(b);
  return true;
}

}  // namespace

bool splitHostPort(const std::string& addr, std::string* host, int* port) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) return false;
  std::string h = addr.substr(0, colon), p = addr.substr(colon + 1);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  }
  int64_t v = 0;
  if (p.find_first_not_of("0123456789") != std::string::npos || !tether::parseInt(p, &v) || v > 65535) return false;
  *host = h;
  *port = static_cast<int>(v);
  return true;
}

namespace {

[[noreturn]] void usageError(const char* fmt, const std::string& arg) {
  std::fprintf(stderr, "tetherrun: ");
  std::fprintf(stderr, fmt, arg.c_str());
  std::fprintf(stderr, "\nRun 'tetherrun --help' for usage.\n");
  std::exit(kExitUsage);
}

}  // namespace

Options parseArgs(int argc, char** argv) {
  Options o;
  bool haveNp = false;
  int i = 1;
  // Value of an option given as "--opt V", "--opt=V" or (short) "-oV".
  auto value = [&](const std::string& a, const char* shortName, const char* longName, std::string* out) {
    std::string l = longName;
    if (a == l || (shortName && a == shortName)) {
      if (i + 1 >= argc) usageError("option %s needs a value", a);
      *out = argv[++i];
      return true;
    }
    if (a.compare(0, l.size() + 1, l + "=") == 0) {
      *out = a.substr(l.size() + 1);
      return true;
    }
    if (shortName && a.size() > 2 && a.compare(0, 2, shortName) == 0) {
      *out = a.substr(2);
      return true;
    }
    return false;
  };
  for (; i < argc; ++i) {
    std::string a = argv[i], v;
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-' || a == "-") break;
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      std::exit(0);
    } else if (a == "--version") {
      std::printf("tetherrun (tether) %d.%d.%d\n", TETHER_VERSION_MAJOR, TETHER_VERSION_MINOR, TETHER_VERSION_PATCH);
      std::exit(0);
    } else if (a == "--tag-output") {
      o.tagOutput = true;
    } else if (value(a, "-n", "--np", &v)) {
      int64_t n = 0;
      if (!tether::parseInt(v, &n) || n < 1 || n > kMaxPes)
        usageError("-n/--np needs a number of PEs in 1..1024, got '%s'", v);
      o.np = static_cast<int>(n);
      haveNp = true;
    } else if (value(a, nullptr, "--ranks", &v)) {
      if (!parseRange(v, &o.first, &o.last)) usageError("--ranks expects FIRST-LAST or FIRST (ranks), got '%s'", v);
      o.haveRanks = true;
    } else if (value(a, nullptr, "--rendezvous", &v)) {
      std::string host;
      int port = 0;
      if (!splitHostPort(v, &host, &port) || port == 0)
        usageError("--rendezvous expects HOST:PORT with a port in 1-65535, got '%s'", v);
      o.rendezvous = v;
    } else if (value(a, nullptr, "--secret-file", &v)) {
      if (v.empty()) usageError("--secret-file needs a file name%s", "");
      o.secretFile = v;
    } else if (value(a, nullptr, "--output-dir", &v)) {
      if (v.empty()) usageError("--output-dir needs a directory%s", "");
      o.outputDir = v;
    } else if (value(a, "-x", "--env", &v)) {
      if (!isAssignment(v)) usageError("-x/--env expects NAME=VALUE, got '%s'", v);
      o.env.push_back(v);
    } else if (value(a, nullptr, "--timeout", &v)) {
      if (!tether::parseSeconds(v, &o.timeout) || o.timeout <= 0)
        usageError("--timeout needs a positive duration (e.g. 30, 90s, 2m), got '%s'", v);
    } else {
      usageError("unknown option '%s'", a);
    }
  }
  for (; i < argc && isAssignment(argv[i]); ++i) o.env.push_back(argv[i]);
  if (!haveNp) usageError("the number of PEs is required (-n N)%s", "");
  if (!o.haveRanks) o.last = o.np - 1;
  if (o.last >= o.np)
    usageError("--ranks %s is outside the job: ranks are 0..N-1 (-n)",
               std::to_string(o.first) + "-" + std::to_string(o.last) + " of N=" + std::to_string(o.np));
  if ((o.first > 0 || o.last < o.np - 1) && o.rendezvous.empty())
    usageError("--ranks %s starts only part of the job: the other ranks need the same address, give --rendezvous "
               "HOST:PORT (rank 0's host, the same on every host)",
               std::to_string(o.first) + "-" + std::to_string(o.last));
  if (!o.secretFile.empty() && o.rendezvous.empty())
    usageError("--secret-file%s is for a job over several hosts; it needs --rendezvous HOST:PORT", "");
  if (i >= argc) usageError("no program given%s", "");
  for (; i < argc; ++i) o.argv.push_back(argv[i]);
  return o;
}

}  // namespace tetherrun
