// A descriptor spyglass keeps open in the program's process, moved out of the program's
// way: a program that closes every descriptor and opens files of its own gets the lowest
// free numbers, so a high one is far less likely to be closed under us, or reused by the
// program for a file that our checks would take for ours.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace spyglass::platform {

// `fd` moved to a number in the top quarter of the first 1024 allowed (closing `fd`), or
// `fd` itself where that cannot be done.
inline int move_fd_high(int fd) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return fd;
  const rlim_t cap = std::min<rlim_t>(limit.rlim_cur, 1024);
  const int base = static_cast<int>(cap * 3 / 4);
  if (base <= fd) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, base);
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

}  // namespace spyglass::platform
