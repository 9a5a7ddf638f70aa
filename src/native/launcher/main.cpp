// The `spyglass` command. A Python process takes some 20 ms to start before it can parse
// a command line, and `spyglass run` used to start two, one after the other: itself, then
// the program. This launcher starts both at once. The program's interpreter starts with
// the run's bootstrap on its PYTHONPATH and waits there, before any of its code runs, for
// the supervisor (this process, exec'd into Python: still the program's parent) to parse
// and check the command line and send the run's configuration down a pipe; or to close
// the pipe unwritten, which ends it, when the supervisor runs the command another way
// (an error, a line the launcher misread). Every other command line goes to the Python
// command line as it is. spyglass/runtime/launched.py is the supervisor's side.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/run_split.hpp"

extern char** environ;

namespace {

// What the supervisor runs: the command line's own entry point. Not `-m spyglass`: runpy
// costs start-up. sys.path[0] is what a script installed beside the interpreter would
// have, not the current directory (where a spyglass.py would be imported instead).
//
// `spyglass run`'s supervisor starts without the site module (-S): site's scan of the
// installed packages and their .pth files cost some 8 ms of CPU before the program could
// have its configuration, in a run whose program needs the same CPU. The one directory it
// needs, where this spyglass is installed, is given in kSupervisorSiteEnv; what else site
// would have done is done when the supervisor needs it (launched.ensure_site), and at once
// when spyglass cannot be imported without it (an editable install, say).
constexpr const char kSupervisor[] =
    "import os, sys\n"
    "if sys.path and sys.path[0] == '': sys.path[0] = os.path.dirname(sys.executable)\n"
    "if os.environ.get('SPYGLASS_SUPERVISOR_SITE'):\n"
    "    sys.path.append(os.environ['SPYGLASS_SUPERVISOR_SITE'])\n"
    "for attempt in (1, 2):\n"
    "    try:\n"
    "        from spyglass.cli.main import program\n"
    "        break\n"
    "    except ImportError as e:\n"
    "        if attempt == 2 or not sys.flags.no_site:\n"
    "            sys.stderr.write('spyglass: error: %s cannot import spyglass: %s\\n' % "
    "(sys.executable, e))\n"
    "            sys.exit(2)\n"
    "        import site\n"
    "        site.main()\n"
    "program()\n";

// spyglass/runtime/launched.py reads these; the bootstrap reads kConfigFdEnv.
constexpr const char kLaunchedEnv[] = "SPYGLASS_LAUNCHED";
constexpr const char kConfigFdEnv[] = "SPYGLASS_CONFIG_FD";
constexpr const char kSupervisorEnv[] = "SPYGLASS_SUPERVISOR";           // run_environment.py
constexpr const char kSupervisorSiteEnv[] = "SPYGLASS_SUPERVISOR_SITE";  // launched.py
// Set when the program starts with SIGINT blocked, for its bootstrap to unblock it
// (sitecustomize.py; supervisor.py sets it too).
constexpr const char kSigintBlockedEnv[] = "SPYGLASS_SIGINT_BLOCKED";
constexpr const char kClassicEnv[] = "SPYGLASS_NO_FAST_START";
constexpr const char kDryRunEnv[] = "SPYGLASS_LAUNCHER_DRY_RUN";

// The signals the supervisor takes synchronously (runtime/supervisor.py: _PASSED_ON, and
// SIGCHLD): blocked from before the fork, so that none sent while its interpreter starts
// is lost, nor the program's end.
constexpr int kWatched[] = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                            SIGALRM, SIGWINCH,  SIGCHLD, SIGPWR,  SIGIO,   SIGURG,
                            SIGPROF, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGSYS};

// kWatched and the real-time signals: those the supervisor passes on (supervisor.py).
std::vector<int> watched_signals() {
  std::vector<int> out(std::begin(kWatched), std::end(kWatched));
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) out.push_back(s);
  return out;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string this_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return dir_of(buf);
}

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The interpreter this spyglass was installed for: the one beside it (a virtual
// environment's, pyenv's, a prefix's), else the one that built it, else the same version
// on PATH.
std::string find_python(const std::string& here) {
  const std::string name = "python" SPYGLASS_PYTHON_VERSION;
  if (!here.empty() && executable(here + "/" + name)) return here + "/" + name;
  if (executable(SPYGLASS_BUILD_PYTHON)) return SPYGLASS_BUILD_PYTHON;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/' && executable(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return {};
}

// The run's bootstrap directory in the package installed beside this launcher, or ""
// where it is not there (then the Python side starts the program itself).
std::string find_bootstrap(const std::string& here) {
  if (here.empty()) return {};
  const std::string dir = here + "/" SPYGLASS_SITE_FROM_SCRIPTS "/spyglass/runtime/bootstrap";
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) return {};
  const std::string found = real;
  return access((found + "/sitecustomize.py").c_str(), R_OK) == 0 ? found : std::string{};
}

// The directory the package is installed in, from its bootstrap's: the one directory of
// site's that the supervisor needs.
std::string site_of(const std::string& bootstrap) {
  constexpr std::string_view kBelow = "/spyglass/runtime/bootstrap";
  if (bootstrap.size() <= kBelow.size() ||
      bootstrap.compare(bootstrap.size() - kBelow.size(), kBelow.size(), kBelow) != 0) {
    return {};
  }
  return bootstrap.substr(0, bootstrap.size() - kBelow.size());
}

// PYTHONPATH with the bootstrap first, once (run_environment._with_bootstrap). Its empty
// entries stay: each is the current directory to Python (`PYTHONPATH=$PYTHONPATH:/x`).
std::string with_bootstrap(const std::string& bootstrap, const char* pythonpath) {
  std::string out = bootstrap;
  const std::string old = pythonpath ? pythonpath : "";
  if (old.empty()) return out;  // unset, to Python
  std::size_t start = 0;
  while (start <= old.size()) {
    std::size_t end = old.find(':', start);
    if (end == std::string::npos) end = old.size();
    const std::string entry = old.substr(start, end - start);
    if (entry != bootstrap) out += ":" + entry;
    start = end + 1;
  }
  return out;
}

void say(const std::string& message) {
  const std::string line = "spyglass: error: " + message + "\n";
  if (write(STDERR_FILENO, line.data(), line.size()) < 0) {
    // nowhere left to say it
  }
}

// `site_dir`: where spyglass is installed, for a supervisor started without site (see
// kSupervisor); empty: with it.
[[noreturn]] void run_python_cli(const std::string& python, int argc, char** argv,
                                 const std::string& site_dir = {}) {
  std::vector<char*> args{const_cast<char*>(python.c_str())};
  if (!site_dir.empty()) {
    setenv(kSupervisorSiteEnv, site_dir.c_str(), 1);
    args.push_back(const_cast<char*>("-S"));
  }
  args.push_back(const_cast<char*>("-c"));
  args.push_back(const_cast<char*>(kSupervisor));
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(python.c_str(), args.data());
  say("cannot run " + python + ": " + std::strerror(errno));
  _exit(127);
}

// In the forked child: the program, under the run's bootstrap, reading its configuration
// from `config_fd`.
[[noreturn]] void exec_program(const std::string& python, const std::string& bootstrap,
                               int config_fd, int target, char** argv,
                               const sigset_t& original_mask) {
  // SIGINT stays blocked until the program's bootstrap has its handler for it: one passed
  // on by the supervisor before then (sent to spyglass as it started) raised
  // KeyboardInterrupt in site's own imports, a fatal error, rather than ending the program
  // of SIGINT.
  sigset_t mask = original_mask;
  const bool block_sigint = sigismember(&original_mask, SIGINT) == 0;
  if (block_sigint) sigaddset(&mask, SIGINT);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  fcntl(config_fd, F_SETFD, 0);  // this end, and only it, stays open across exec
  const std::string pythonpath = "PYTHONPATH=" + with_bootstrap(bootstrap, getenv("PYTHONPATH"));
  const std::string fd = std::string(kConfigFdEnv) + "=" + std::to_string(config_fd);
  const std::string supervisor = std::string(kSupervisorEnv) + "=" + std::to_string(getppid()) +
                                 ":" + std::to_string(getpid());
  std::vector<char*> env;
  const std::string sigint = std::string(kSigintBlockedEnv) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0 &&
        std::strncmp(*e, sigint.c_str(), sigint.size()) != 0) {
      env.push_back(*e);
    }
  }
  const std::string sigint_blocked = sigint + "1";
  if (block_sigint) env.push_back(const_cast<char*>(sigint_blocked.c_str()));
  env.push_back(const_cast<char*>(pythonpath.c_str()));
  env.push_back(const_cast<char*>(fd.c_str()));
  env.push_back(const_cast<char*>(supervisor.c_str()));
  env.push_back(nullptr);
  std::vector<char*> args{const_cast<char*>(python.c_str())};
  for (int i = target; argv[i] != nullptr; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execve(python.c_str(), args.data(), env.data());
  say("cannot run " + python + ": " + std::strerror(errno));
  _exit(127);
}

// A pipe end on 0, 1 or 2 (spyglass started with one of them closed) would become the
// program's stdin, stdout or stderr: both ends move above them (closing the pipe, and
// returning false, if they cannot).
bool above_standard_fds(int (&fds)[2]) {
  for (int& fd : fds) {
    if (fd > STDERR_FILENO) continue;
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(fd);
    fd = moved;
  }
  if (fds[0] >= 0 && fds[1] >= 0) return true;
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  return false;
}

[[noreturn]] void run_fast(const std::string& python, const std::string& bootstrap, int target,
                           int argc, char** argv) {
  sigset_t watched;
  sigset_t original;
  sigemptyset(&watched);
  for (int s : watched_signals()) sigaddset(&watched, s);
  sigprocmask(SIG_BLOCK, &watched, &original);
  // Whoever started spyglass may have ignored SIGCHLD: the program's status would be lost.
  signal(SIGCHLD, SIG_DFL);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0 || !above_standard_fds(fds)) {
    sigprocmask(SIG_SETMASK, &original, nullptr);
    run_python_cli(python, argc, argv);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    sigprocmask(SIG_SETMASK, &original, nullptr);
    run_python_cli(python, argc, argv);
  }
  if (pid == 0) exec_program(python, bootstrap, fds[0], target, argv, original);
  close(fds[0]);
  fcntl(fds[1], F_SETFD, 0);
  // The watched signals that were blocked already: the supervisor gives the program's
  // end back the mask spyglass was started with.
  std::string blocked;
  for (int s : watched_signals()) {
    if (sigismember(&original, s) == 1) blocked += (blocked.empty() ? "" : ",") + std::to_string(s);
  }
  const std::string launched = std::to_string(pid) + ":" + std::to_string(fds[1]) + ":" +
                               std::to_string(target) + ":" + blocked + ":" + bootstrap;
  setenv(kLaunchedEnv, launched.c_str(), 1);
  run_python_cli(python, argc, argv, site_of(bootstrap));
}

}  // namespace

int main(int argc, char** argv) {
  std::string here = this_dir();
  if (here.empty() && std::strchr(argv[0], '/') != nullptr) {
    char real[PATH_MAX];  // no /proc: where the shell found us
    if (realpath(dir_of(argv[0]).c_str(), real) != nullptr) here = real;
  }
  const std::string python = find_python(here);
  if (python.empty()) {
    say("cannot find python" SPYGLASS_PYTHON_VERSION
        ", the Python this spyglass was installed for (not beside it, nor on PATH)");
    return 127;
  }
  int target = spyglass::launcher::run_target_index(argc, argv);
  const char* classic = std::getenv(kClassicEnv);
  const std::string bootstrap =
      target < 0 || (classic != nullptr && *classic != '\0') ? std::string{} : find_bootstrap(here);
  if (bootstrap.empty()) target = -1;
  if (std::getenv(kDryRunEnv) != nullptr) {
    std::printf("python=%s\nbootstrap=%s\ntarget=%d\n", python.c_str(), bootstrap.c_str(), target);
    return 0;
  }
  if (target < 0) run_python_cli(python, argc, argv);
  run_fast(python, bootstrap, target, argc, argv);
}
