/* Loops of the calls spyglass hooks, made from C so that each goes through this object's
 * own offset table, as a library's would. Loaded with ctypes by bench/costs/measure.py,
 * which times each loop with profiling off and on: the difference per call is the hook's
 * cost. Each function returns the thread CPU time the loop took, in nanoseconds, so that
 * time the thread spent waiting for a core is left out.
 *
 * Built with -fno-builtin so the compiler keeps every call instead of inlining a copy or
 * removing an allocation whose result is unused. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static long long thread_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* What the loops write, so that no call can be proved useless. */
volatile unsigned char hl_sink;

/* `count` pairs of malloc(size) and free. */
long long hl_malloc_free(long count, long size) {
  long long start = thread_ns();
  for (long i = 0; i < count; ++i) {
    unsigned char* p = malloc((size_t)size);
    if (p == NULL) return -1;
    p[0] = (unsigned char)i;
    hl_sink = p[0];
    free(p);
  }
  return thread_ns() - start;
}

/* `count` copies of `size` bytes between two parts of one buffer allocated once, placed so
 * that their distance is not a multiple of 4 KiB in any run: otherwise where malloc put two
 * separate buffers would decide whether the copy suffers 4K aliasing, and runs would differ
 * by that, not by the hook. */
long long hl_memcpy(long count, long size) {
  unsigned char* buf = malloc(2 * (size_t)size + 512);
  if (buf == NULL) return -1;
  unsigned char* a = buf;
  unsigned char* b = buf + size + 320;
  memset(a, 1, (size_t)size);
  long long start = thread_ns();
  for (long i = 0; i < count; ++i) {
    a[0] = (unsigned char)i;
    memcpy(b, a, (size_t)size);
  }
  long long took = thread_ns() - start;
  hl_sink = b[0];
  free(buf);
  return took;
}

/* `count` anonymous mappings of `size` bytes, each touched once and unmapped: the hooks
 * count each as an allocation and look up every unmap in the table of reservations. */
long long hl_mmap_munmap(long count, long size) {
  long long start = thread_ns();
  for (long i = 0; i < count; ++i) {
    unsigned char* p =
        mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    p[0] = (unsigned char)i;
    hl_sink = p[0];
    munmap(p, (size_t)size);
  }
  return thread_ns() - start;
}

/* A pure loop of the same shape, no call: what the clock and the loop cost alone. */
long long hl_empty(long count) {
  long long start = thread_ns();
  for (long i = 0; i < count; ++i) hl_sink = (unsigned char)i;
  return thread_ns() - start;
}

static void empty_handler(int signo, siginfo_t* info, void* ucontext) {
  (void)signo;
  (void)info;
  (void)ucontext;
  hl_sink = 1;
}

/* `count` deliveries of a real-time signal to this thread, to an empty handler: what the
 * kernel's side of one sample (signal frame, handler entry, sigreturn) costs. Returns -1 if
 * no free real-time signal is found. */
long long hl_signal_roundtrip(long count) {
  int signo = -1;
  struct sigaction previous;
  for (int s = SIGRTMAX - 1; s > SIGRTMIN + 4; --s) {
    if (sigaction(s, NULL, &previous) == 0 && previous.sa_handler == SIG_DFL) {
      signo = s;
      break;
    }
  }
  if (signo < 0) return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = empty_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, &previous) != 0) return -1;
  long long start = thread_ns();
  for (long i = 0; i < count; ++i) raise(signo);
  long long took = thread_ns() - start;
  sigaction(signo, &previous, NULL);
  return took;
}
