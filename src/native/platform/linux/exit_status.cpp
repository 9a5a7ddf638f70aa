#include "../exit_status.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace spyglass::platform {

namespace {

char g_path[4096];
pid_t g_pid = 0;  // the process the path is for: a forked child inherits the hook, not it
bool g_registered = false;

void write_status(int status, void*) {
  if (g_pid != getpid() || g_path[0] == '\0') return;
  char text[16];
  const int n = std::snprintf(text, sizeof text, "%d", status);
  const int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (n > 0) (void)!write(fd, text, static_cast<size_t>(n));
  close(fd);
}

}  // namespace

bool note_exit_status(const std::string& path) {
  if (path.size() >= sizeof g_path) return false;
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  g_pid = getpid();
  if (!g_registered) g_registered = on_exit(write_status, nullptr) == 0;
  return g_registered;
}

}  // namespace spyglass::platform
