#include "launcher/run_split.hpp"

#include <strings.h>

#include <cstring>
#include <iterator>

namespace spyglass::launcher {
namespace {

// spyglass/cli/run_quick_args.py: VALUE_OPTIONS and FLAGS, which the Python tests hold to
// these (tests/integration/test_launcher.py runs both splits on the same lines).
constexpr const char* kValueOptions[] = {
    "-o",
    "--outfile",
    "--interval",
    "--memory-window",
    "--program-path",
    "--profile-only",
    "--profile-exclude",
    "--snapshot-every",
};
constexpr const char* kFlags[] = {
    "--no-report",        "--no-color", "--open",      "--live",
    "--profile-all",      "--cpu-only", "--no-memory", "--memory",
    "--no-group-threads", "--gpu",      "--no-gpu",
};

bool one_of(const char* arg, const char* const* names, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (std::strcmp(arg, names[i]) == 0) return true;
  }
  return false;
}

bool ends_with_ci(const char* s, const char* suffix) {
  const std::size_t n = std::strlen(s);
  const std::size_t m = std::strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

// cli/run.py: _is_html_name (the html format's extensions).
bool is_html_name(const char* arg) {
  return arg[0] != '-' && (ends_with_ci(arg, ".html") || ends_with_ci(arg, ".htm"));
}

}  // namespace

int run_target_index(int argc, const char* const* argv) {
  if (argc < 3 || std::strcmp(argv[1], "run") != 0) return -1;
  int i = 2;
  while (i < argc) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "-m") == 0 || std::strcmp(arg, "-c") == 0) {
      return i + 1 < argc ? i : -1;
    }
    if (arg[0] != '-') return i;  // the script
    if (std::strcmp(arg, "--") == 0) {
      // Options end: the script is next. One named like an option is left to Python.
      return i + 1 < argc && argv[i + 1][0] != '-' ? i + 1 : -1;
    }
    if (std::strcmp(arg, "--html") == 0) {
      i += (i + 1 < argc && is_html_name(argv[i + 1])) ? 2 : 1;
      continue;
    }
    if (std::strncmp(arg, "--html=", 7) == 0 || one_of(arg, kFlags, std::size(kFlags))) {
      i += 1;
      continue;
    }
    // A value that looks like an option is refused by argparse: let it say so.
    if (one_of(arg, kValueOptions, std::size(kValueOptions)) && i + 1 < argc &&
        (argv[i + 1][0] != '-' || std::strcmp(argv[i + 1], "-") == 0)) {
      i += 2;
      continue;
    }
    return -1;  // "-", -h, -mMODULE, an unknown or abbreviated option
  }
  return -1;
}

}  // namespace spyglass::launcher
