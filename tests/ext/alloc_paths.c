/* Every allocation path spyglass hooks, called from C so that the calls go through this
 * object's own offset table, as a library's or an extension's do. Built as a Python
 * extension module (alloc_paths) and also loaded as a plain library with ctypes: the same
 * functions then run from an object loaded by ctypes rather than by import.
 *
 * ap_run(kind, size, count) makes `count` allocations of `size` bytes of one kind, touches
 * every page (the program's own truth is what it asked for) and keeps them; ap_release()
 * frees them all. Returns the bytes allocated (for realloc and mremap: the sizes asked for
 * by the resizing call, which is what a profiler counts as allocated).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { AP_MALLOC, AP_CALLOC, AP_REALLOC, AP_POSIX_MEMALIGN, AP_ALIGNED_ALLOC, AP_MMAP, AP_MREMAP };

#define AP_MAX 256
static void* held[AP_MAX];
static size_t held_size[AP_MAX];
static int held_mapped[AP_MAX];
static int held_count;

static void touch(char* p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
}

static void keep(void* p, size_t n, int mapped) {
  if (held_count < AP_MAX) {
    held[held_count] = p;
    held_size[held_count] = n;
    held_mapped[held_count] = mapped;
    ++held_count;
  }
}

long long ap_run(int kind, size_t size, int count) {
  long long total = 0;
  for (int i = 0; i < count; ++i) {
    void* p = NULL;
    switch (kind) {
      case AP_MALLOC:
        p = malloc(size);
        break;
      case AP_CALLOC:
        p = calloc(1, size);
        break;
      case AP_REALLOC: /* half first, then grown: both calls allocate */
        p = realloc(NULL, size / 2);
        if (p != NULL) total += (long long)(size / 2);
        p = realloc(p, size);
        break;
      case AP_POSIX_MEMALIGN:
        if (posix_memalign(&p, 64, size) != 0) p = NULL;
        break;
      case AP_ALIGNED_ALLOC:
        p = aligned_alloc(4096, size);
        break;
      case AP_MMAP:
      case AP_MREMAP: {
        size_t first = kind == AP_MREMAP ? size / 2 : size;
        p = mmap(NULL, first, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return -1;
        if (kind == AP_MREMAP) {
          total += (long long)first;
          p = mremap(p, first, size, MREMAP_MAYMOVE);
          if (p == MAP_FAILED) return -1;
        }
        touch(p, size);
        keep(p, size, 1);
        total += (long long)size;
        continue;
      }
      default:
        return -1;
    }
    if (p == NULL) return -1;
    touch(p, size);
    keep(p, size, 0);
    total += (long long)size;
  }
  return total;
}

void ap_release(void) {
  for (int i = 0; i < held_count; ++i) {
    if (held_mapped[i]) {
      munmap(held[i], held_size[i]);
    } else {
      free(held[i]);
    }
  }
  held_count = 0;
}

/* An allocator's arena, as mimalloc keeps one: address space reserved with MAP_NORESERVE,
 * used by touching its pages, given back with madvise, never unmapped while in use. */
static char* arena;
static size_t arena_size;

static PyObject* py_arena_reserve(PyObject* self, PyObject* args) {
  Py_ssize_t mib = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "n", &mib)) return NULL;
  arena_size = (size_t)mib << 20;
  void* p = mmap(NULL, arena_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return PyErr_SetFromErrno(PyExc_OSError);
  arena = p;
  Py_RETURN_NONE;
}

/* use(offset_mib, mib): touches those pages; purge(offset_mib, mib): gives them back. */
static PyObject* py_arena_use(PyObject* self, PyObject* args) {
  Py_ssize_t offset = 0, mib = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "nn", &offset, &mib)) return NULL;
  touch(arena + ((size_t)offset << 20), (size_t)mib << 20);
  Py_RETURN_NONE;
}

/* commit(offset_mib, mib): maps those pages afresh over the arena (MAP_FIXED, as
 * allocators that commit and decommit by mapping do) and touches them. */
static PyObject* py_arena_commit(PyObject* self, PyObject* args) {
  Py_ssize_t offset = 0, mib = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "nn", &offset, &mib)) return NULL;
  char* at = arena + ((size_t)offset << 20);
  void* p = mmap(at, (size_t)mib << 20, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return PyErr_SetFromErrno(PyExc_OSError);
  touch(at, (size_t)mib << 20);
  Py_RETURN_NONE;
}

static PyObject* py_arena_purge(PyObject* self, PyObject* args) {
  Py_ssize_t offset = 0, mib = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "nn", &offset, &mib)) return NULL;
  if (madvise(arena + ((size_t)offset << 20), (size_t)mib << 20, MADV_DONTNEED) != 0) {
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  Py_RETURN_NONE;
}

static PyObject* py_arena_release(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  munmap(arena, arena_size);
  arena = NULL;
  Py_RETURN_NONE;
}

static PyObject* py_run(PyObject* self, PyObject* args) {
  int kind = 0;
  Py_ssize_t size = 0;
  int count = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "ini", &kind, &size, &count)) return NULL;
  return PyLong_FromLongLong(ap_run(kind, (size_t)size, count));
}

static PyObject* py_release(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  ap_release();
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", py_run, METH_VARARGS, "run(kind, size, count) -> bytes allocated"},
    {"release", py_release, METH_NOARGS, "frees every block run() kept"},
    {"arena_reserve", py_arena_reserve, METH_VARARGS, "arena_reserve(mib): maps an arena"},
    {"arena_use", py_arena_use, METH_VARARGS, "arena_use(offset_mib, mib): touches pages"},
    {"arena_purge", py_arena_purge, METH_VARARGS, "arena_purge(offset_mib, mib): gives back"},
    {"arena_commit", py_arena_commit, METH_VARARGS, "arena_commit(offset_mib, mib): maps, touches"},
    {"arena_release", py_arena_release, METH_NOARGS, "unmaps the arena"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "alloc_paths", NULL, -1, methods};

PyMODINIT_FUNC PyInit_alloc_paths(void) { return PyModule_Create(&module); }
