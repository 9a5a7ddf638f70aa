/*
 * alloc_storm: ground truth for the exact memory counters (spyglass._native.memory_totals()).
 *
 * A plain shared library (not a Python extension), loaded with ctypes.CDLL. Every thread it
 * starts does a deterministic storm of malloc, calloc, realloc (growing and shrinking),
 * posix_memalign, aligned_alloc, memalign and valloc of 1 B to 48 MiB, frees everything, and
 * records its own truth: the malloc_usable_size of every block it got (alloc) and of every
 * block it gave back (free), realloc counting as free(old) + alloc(new), and its kernel
 * thread id (gettid). Sizes include blocks >= 64 KiB and blocks above glibc's largest dynamic
 * mmap threshold (32 MiB on 64-bit), so some are always mmapped.
 *
 *   void *alloc_storm_begin(int nthreads, uint64_t seed, int kind, struct storm_truth *out)
 *       starts the threads: kind STORM_ALLOC (0) does the allocation storm above, kind
 *       STORM_COPY (1) mallocs two buffers, memcpy's and memmove's known amounts between
 *       them and frees them (out[i].copy_bytes: the bytes copied). Each thread fills out[i]
 *       and then waits, alive, until alloc_storm_finish, so that nothing glibc does when a
 *       thread exits can blur the counters. NULL if a thread could not be started.
 *   int alloc_storm_wait_done(void *h, int timeout_ms)   0 once every thread is done, -1 on
 *       timeout
 *   int alloc_storm_finish(void *h)     releases and joins the threads; -1 if one failed
 *   int alloc_storm_run(int nthreads, uint64_t seed, int kind, struct storm_truth *out)
 *       the three in one (0: ok)
 *
 * Every libc call here must go through this library's PLT, so that spyglass's hooks see
 * it: built with -fno-builtin (no inlined memcpy, no malloc/free pair folded away),
 * -fno-tree-loop-distribute-patterns (no loop turned into a memcpy call) and without
 * _FORTIFY_SOURCE (no __memcpy_chk). Sizes also pass through volatile variables. The library
 * uses no thread-local variables (whose lazy allocation would go through malloc).
 *
 * Built by tests/conftest.py (fixture `alloc_storm_lib`):
 *   cc -O1 -fno-builtin -fno-tree-loop-distribute-patterns -U_FORTIFY_SOURCE
 *      -D_FORTIFY_SOURCE=0 -shared -fPIC alloc_storm.c -o liballoc_storm.so -lpthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Keep in step with StormTruth in tests/programs/mem_truth.py. */
struct storm_truth {
  int64_t tid;
  uint64_t alloc_bytes;
  uint64_t alloc_count;
  uint64_t free_bytes;
  uint64_t free_count;
  uint64_t copy_bytes;
  uint64_t large_allocs; /* blocks >= 64 KiB (usable size) */
  uint64_t huge_allocs;  /* blocks > 32 MiB: always mmapped */
  uint64_t checksum;     /* of the bytes written, so that the work is observable */
};

#define SLOTS 192
#define OPS_PER_THREAD 6000
#define LARGE_BLOCK (64u << 10)
#define HUGE_BLOCK (32u << 20)

enum { STORM_ALLOC = 0, STORM_COPY = 1 };

struct storm_thread {
  pthread_t thread;
  int started;
  int kind;
  int failed;
  uint64_t seed;
  struct storm_truth* out;
  struct storm* owner;
};

struct storm {
  int nthreads;
  int done;
  int released;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct storm_thread threads[64];
};

static uint64_t next_random(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static int64_t my_tid(void) { return (int64_t)syscall(SYS_gettid); }

/* Sizes pass through here so that the compiler knows nothing about them. */
static size_t opaque(size_t n) {
  volatile size_t v = n;
  return v;
}

/* A request size: mostly small, some medium, some >= 64 KiB, a few above 32 MiB. */
static size_t pick_size(uint64_t* x) {
  const uint64_t r = next_random(x);
  const unsigned bucket = (unsigned)(r % 1000);
  const uint64_t v = r >> 16;
  if (bucket < 600) return 1 + (size_t)(v % 512);                  /* 1 B .. 512 B */
  if (bucket < 850) return 513 + (size_t)(v % (60u << 10));        /* .. ~60 KiB */
  if (bucket < 995) return (64u << 10) + (size_t)(v % (4u << 20)); /* 64 KiB .. ~4 MiB */
  return (33u << 20) + (size_t)(v % (15u << 20));                  /* 33 .. 48 MiB */
}

static void note_alloc(struct storm_truth* t, void* p) {
  const size_t usable = malloc_usable_size(p);
  t->alloc_bytes += usable;
  t->alloc_count += 1;
  if (usable >= LARGE_BLOCK) t->large_allocs += 1;
  if (usable > HUGE_BLOCK) t->huge_allocs += 1;
}

static void note_free(struct storm_truth* t, void* p) {
  t->free_bytes += malloc_usable_size(p);
  t->free_count += 1;
}

/* Writes the first and last byte (and one per 64 KiB of small-enough blocks). */
static void touch(struct storm_truth* t, void* p, size_t n, uint64_t value) {
  unsigned char* b = (unsigned char*)p;
  const size_t step = 64u << 10;
  if (n <= (4u << 20)) {
    for (size_t i = 0; i < n; i += step) b[i] = (unsigned char)(value + i);
  }
  b[0] = (unsigned char)value;
  b[n - 1] = (unsigned char)(value >> 8);
  t->checksum = t->checksum * 31 + b[0] + b[n - 1];
}

/* One fresh block through one of the seven allocation functions; NULL on failure. */
static void* allocate(struct storm_truth* t, uint64_t* x, size_t* size_out) {
  size_t n = opaque(pick_size(x));
  static const size_t alignments[] = {16, 32, 64, 256, 4096};
  const size_t align = alignments[next_random(x) % 5];
  void* p = NULL;
  switch (next_random(x) % 7) {
    case 0:
      p = malloc(n);
      break;
    case 1: {
      const size_t count = opaque(1 + n % 16);
      n = opaque((n + count - 1) / count * count);
      p = calloc(count, n / count);
      break;
    }
    case 2: /* realloc of NULL allocates: an allocation, and no free */
      p = realloc(NULL, n);
      break;
    case 3:
      if (posix_memalign(&p, align, n) != 0) p = NULL;
      break;
    case 4:
      n = opaque((n + align - 1) / align * align); /* C11: a multiple of the alignment */
      p = aligned_alloc(align, n);
      break;
    case 5:
      p = memalign(align, n);
      break;
    default:
      p = valloc(n);
      break;
  }
  if (p == NULL) return NULL;
  note_alloc(t, p);
  touch(t, p, n, next_random(x));
  *size_out = n;
  return p;
}

static void storm(struct storm_truth* t, uint64_t seed) {
  void* slot[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
  for (int op = 0; op < OPS_PER_THREAD; op++) {
    const unsigned i = (unsigned)(next_random(&x) % SLOTS);
    if (slot[i] == NULL) {
      slot[i] = allocate(t, &x, &size[i]);
      continue;
    }
    const unsigned what = (unsigned)(next_random(&x) % 4);
    if (what < 2) { /* free */
      note_free(t, slot[i]);
      free(slot[i]);
      slot[i] = NULL;
    } else { /* realloc: grow (what == 2, below 16 MiB) or shrink, never to 0 */
      size_t n = size[i];
      n = what == 2 && n < (16u << 20)
              ? n + 1 + (size_t)(next_random(&x) % (n < (1u << 20) ? 2 * n + 64 : n))
              : 1 + n / (2 + (size_t)(next_random(&x) % 8));
      n = opaque(n);
      const size_t old_usable = malloc_usable_size(slot[i]);
      void* q = realloc(slot[i], n);
      if (q == NULL) continue; /* the old block is untouched: no free, no alloc */
      t->free_bytes += old_usable;
      t->free_count += 1;
      note_alloc(t, q);
      touch(t, q, n, next_random(&x));
      slot[i] = q;
      size[i] = n;
    }
  }
  for (unsigned i = 0; i < SLOTS; i++) {
    if (slot[i] != NULL) {
      note_free(t, slot[i]);
      free(slot[i]);
    }
  }
}

/* Copies known amounts with memcpy and memmove (overlapping); 0, or -1 if out of memory. */
static int copy_storm(struct storm_truth* t, uint64_t seed) {
  const size_t cap = opaque(33u << 20);
  unsigned char* a = (unsigned char*)malloc(cap);
  unsigned char* b = (unsigned char*)malloc(cap);
  if (a == NULL || b == NULL) {
    free(a);
    free(b);
    return -1;
  }
  note_alloc(t, a);
  note_alloc(t, b);
  touch(t, a, cap, 1);
  touch(t, b, cap, 2);
  static const size_t sizes[] = {1, 7, 64, 4096, 65536, 1u << 20, 5u << 20, 32u << 20};
  uint64_t x = seed | 1;
  for (int round = 0; round < 40; round++) {
    const size_t n = opaque(sizes[round % 8] + (size_t)(next_random(&x) % 257));
    if (round % 2 == 0) {
      memcpy(b, a, n);
    } else {
      memmove(a + 1, a, n);
    }
    t->copy_bytes += n;
    t->checksum = t->checksum * 31 + b[n / 2] + a[n / 3];
  }
  note_free(t, a);
  free(a);
  note_free(t, b);
  free(b);
  return 0;
}

static void* storm_main(void* arg) {
  struct storm_thread* me = (struct storm_thread*)arg;
  struct storm* s = me->owner;
  struct storm_truth* t = me->out;
  memset(t, 0, sizeof *t);
  t->tid = my_tid();
  if (me->kind == STORM_COPY) {
    me->failed = copy_storm(t, me->seed) != 0;
  } else {
    storm(t, me->seed);
  }
  pthread_mutex_lock(&s->lock);
  s->done += 1;
  pthread_cond_broadcast(&s->cond);
  while (!s->released) pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

int alloc_storm_finish(void* handle);

void* alloc_storm_begin(int nthreads, uint64_t seed, int kind, struct storm_truth* out) {
  if (nthreads < 1 || nthreads > 64 || out == NULL) return NULL;
  if (kind != STORM_ALLOC && kind != STORM_COPY) return NULL;
  struct storm* s = (struct storm*)calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->nthreads = nthreads;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  for (int i = 0; i < nthreads; i++) {
    struct storm_thread* th = &s->threads[i];
    th->seed = seed + (uint64_t)i * 1000003u;
    th->kind = kind;
    th->out = &out[i];
    th->owner = s;
    if (pthread_create(&th->thread, NULL, storm_main, th) != 0) {
      s->nthreads = i;
      alloc_storm_finish(s);
      return NULL;
    }
    th->started = 1;
  }
  return s;
}

int alloc_storm_wait_done(void* handle, int timeout_ms) {
  struct storm* s = (struct storm*)handle;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000L;
  }
  int rc = 0;
  pthread_mutex_lock(&s->lock);
  while (s->done < s->nthreads && rc != ETIMEDOUT) {
    rc = pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
  }
  const int all_done = s->done >= s->nthreads;
  pthread_mutex_unlock(&s->lock);
  return all_done ? 0 : -1;
}

int alloc_storm_finish(void* handle) {
  struct storm* s = (struct storm*)handle;
  pthread_mutex_lock(&s->lock);
  s->released = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  int failed = 0;
  for (int i = 0; i < s->nthreads; i++) {
    if (s->threads[i].started) pthread_join(s->threads[i].thread, NULL);
    failed |= s->threads[i].failed;
  }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
  return failed ? -1 : 0;
}

int alloc_storm_run(int nthreads, uint64_t seed, int kind, struct storm_truth* out) {
  void* s = alloc_storm_begin(nthreads, seed, kind, out);
  if (s == NULL) return -1;
  const int waited = alloc_storm_wait_done(s, 600000);
  const int finished = alloc_storm_finish(s);
  return waited != 0 || finished != 0 ? -1 : 0;
}
