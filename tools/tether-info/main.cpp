// tether-info: what this build has, every TETHER_* variable (default, current value, help), and — when run under a
// launcher with --paths — the peer path chosen to every PE and why.
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
      "  (no option)  version, build features and configuration\n"
      "  --config     every TETHER_* variable: type, default, value in this environment, help\n"
      "  --paths      initialise a job (run under tetherrun) and print the path to every PE\n");
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
  std::printf("tether %d.%d.%d\n", TETHER_VERSION_MAJOR, TETHER_VERSION_MINOR, TETHER_VERSION_PATCH);
  std::printf("build: CUDA parts %s; segment kinds: HOST (DEVICE arrives with the GPU heap); paths: self, shm\n",
              TETHER_INFO_CUDA ? "compiled" : "not compiled");
  if (config) {
    std::printf("\n%-24s %-8s %-10s %-12s %s\n", "variable", "type", "default", "value", "help");
    for (const auto& v : tether::configVars()) {
      const char* cur = std::getenv(v.name);
      std::printf("%-24s %-8s %-10s %-12s %s\n", v.name, typeName(v.type), *v.defaultValue ? v.defaultValue : "\"\"",
                  cur ? cur : "(default)", v.help);
    }
  }
  if (paths) {
    tether_t w = nullptr;
    if (tether_init(&w) != TETHER_SUCCESS) {
      std::fprintf(stderr, "tether-info: tether_init failed: %s\n", tether_last_error());
      return 1;
    }
    if (tether_my_pe(w) == 0) std::printf("\nPE 0 of %d: run with TETHER_LOG=info:transport for every PE's choices\n",
                                          tether_n_pes(w));
    tether_finalize(w);
  }
  return 0;
}
