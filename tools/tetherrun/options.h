// tetherrun's command line: the options, their checks and the help text. A bad command line prints why on stderr
// and exits with kExitUsage; --help and --version print on stdout and exit 0.
#pragma once

#include <string>
#include <vector>

namespace tetherrun {

constexpr int kMaxPes = 1024;
constexpr int kExitUsage = 2;

struct Options {
  int np = 0;
  int first = 0, last = -1;      // ranks started here (--ranks); last -1: np - 1
  bool haveRanks = false;
  std::string rendezvous;        // --rendezvous HOST:PORT; empty: 127.0.0.1 and a free port
  std::string secretFile;        // --secret-file
  bool tagOutput = false;
  std::string outputDir;
  std::vector<std::string> env;  // NAME=VALUE, in command-line order
  double timeout = 0;            // 0: none
  std::vector<std::string> argv;
};

// The options of `tetherrun [options] [--] [NAME=VALUE...] program [args...]`, checked (see --help); exits on error.
Options parseArgs(int argc, char** argv);

// "host:port" or "[v6]:port" (the bootstrap's form, src/bootstrap/launcher_env.cpp); false on a bad form or port.
bool splitHostPort(const std::string& addr, std::string* host, int* port);

}  // namespace tetherrun
