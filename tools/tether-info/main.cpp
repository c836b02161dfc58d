// tether-info: what this build of tether has, asked of the libtether it runs against (tether_get_build_info), where
// it is installed, every TETHER_* variable (default, current value, help) and -- under a launcher with --paths -- a
// job's start. Output lines begin with a fixed key ("version:", "features:", ...) that scripts and tests may match.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/config.h"
#include "tether/tether.h"

namespace {

const char* typeName(tether::ConfigType t) {
  switch (t) {
    case tether::ConfigType::String: return "string";
    case tether::ConfigType::Int: return "int";
    case tether::ConfigType::Size: return "size";
    case tether::ConfigType::Seconds: return "seconds";
    case tether::ConfigType::Bool: return "bool";
  }
  return "?";
}

void usage() {
  std::printf(
      "usage: tether-info [--config] [--paths]\n"
      "  (no option)  version, build features, install paths, GPUs, configuration\n"
      "  --config     every TETHER_* variable: type, default, value in this environment, help\n"
      "  --paths      initialise a job (run under tetherrun) and print the path to every PE\n");
}

const char* yesNo(int v) { return v ? "yes" : "no"; }

// Directory part of a path ("" when it has none).
std::string dirName(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

// The file libtether was loaded from (dladdr of one of its functions, symbolic links resolved); "(unknown)" if the loader cannot tell.
std::string libraryPath() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&tether_version), &info) || !info.dli_fname) return "(unknown)";
  char real[PATH_MAX] = {};
  return realpath(info.dli_fname, real) ? real : info.dli_fname;  // without the rpath's "bin/../lib"
}

// <prefix> of this program: the parent of the directory it runs from (<prefix>/bin/tether-info).
std::string prefixOfThisProgram() {
  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "(unknown)";
  return dirName(dirName(std::string(buf, static_cast<size_t>(n))));
}

int printBuild() {
  tether_build_info_t b{};
  if (tether_get_build_info(&b) != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether-info: tether_get_build_info failed: %s\n", tether_last_error());
    return 1;
  }
  std::printf("version: %d.%d.%d (library), %s (headers tether-info was compiled with)\n", b.version_major,
              b.version_minor, b.version_patch, TETHER_VERSION_STRING);
  std::printf("features: CUDA %s; UCX %s", yesNo(b.cuda), yesNo(b.ucx));
  if (b.ucx) std::printf(" (runtime %s)", b.ucx_version);
  std::printf("; NVSHMEM no (not used by the library); sanitizers %s\n", yesNo(b.sanitizers));
  std::printf("segment kinds: HOST, STATIC%s\n", b.cuda ? ", DEVICE (when every PE has a GPU)" : "");
  std::printf("GPUs visible: %d\n", b.gpus_visible);
  std::printf("library: %s\n", libraryPath().c_str());
  std::printf("prefix: %s (this program's; configured install prefix %s)\n", prefixOfThisProgram().c_str(),
              TETHER_INFO_INSTALL_PREFIX);
  std::printf("launcher: tetherrun -n N prog (oshrun is the same); compiler wrappers oshcc, oshc++\n");
  return 0;
}

void printConfig() {
  std::printf("\n%-24s %-8s %-10s %-12s %s\n", "variable", "type", "default", "value", "help");
  for (const auto& v : tether::configVars()) {
    const char* cur = std::getenv(v.name);
    std::printf("%-24s %-8s %-10s %-12s %s\n", v.name, typeName(v.type), *v.defaultValue ? v.defaultValue : "\"\"",
                cur ? cur : "(default)", v.help);
  }
}

int printPaths() {
  tether_t w = nullptr;
  if (tether_init(&w) != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether-info: tether_init failed: %s\n", tether_last_error());
    return 1;
  }
  if (tether_my_pe(w) == 0)
    std::printf("\nPE 0 of %d: run with TETHER_LOG=info:transport for every PE's choices\n", tether_n_pes(w));
  return tether_finalize(w) == TETHER_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool config = argc == 1, paths = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--config")) config = true;
    else if (!std::strcmp(argv[i], "--paths")) paths = true;
    else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) return usage(), 0;
    else return usage(), 2;
  }
  if (printBuild() != 0) return 1;
  if (config) printConfig();
  if (config && !paths) std::printf("\nknobs: the variables above are read at tether_init (README \"Configuration\")\n");
  return paths ? printPaths() : 0;
}
