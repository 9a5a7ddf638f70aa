// Tests of the Linux platform layer: classifying code addresses (CodeRanges).
#include "platform/code_ranges.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "platform/clock.hpp"
#include "platform/signals.hpp"
#include "platform/threads.hpp"

namespace spyglass::platform {
namespace {

// A function of the test executable itself, used as the interpreter anchor.
__attribute__((noinline)) int anchor_function(int x) {
  static volatile int sink = 0;
  sink = sink + x;
  return sink;
}

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

template <typename Fn>
uintptr_t fn_addr(Fn* f) {
  return reinterpret_cast<uintptr_t>(reinterpret_cast<const void*>(f));
}

// The path of the object holding `p`, per the dynamic loader ("" when unknown).
std::string object_of(const void* p) {
  Dl_info info{};
  if (dladdr(p, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// A symbol's definition inside libc itself, not a PLT stub of the executable.
void* libc_symbol(const char* name) {
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* sym = dlsym(handle, name);
  dlclose(handle);
  return sym;
}

// An executable segment as the test finds it itself, for an independent check.
struct Segment {
  uintptr_t begin;
  uintptr_t end;
  std::string name;
};

std::vector<Segment> executable_segments() {
  std::vector<Segment> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* segs = static_cast<std::vector<Segment>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0 || ph.p_memsz == 0) continue;
          const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          segs->push_back({begin, begin + ph.p_memsz, info->dlpi_name ? info->dlpi_name : ""});
        }
        return 0;
      },
      &out);
  return out;
}

bool basename_starts_with(const std::string& path, std::string_view prefix) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.compare(0, prefix.size(), prefix) == 0;
}

// ---------------------------------------------------------------- CodeRanges

TEST(CodeRangesTest, EmptyBeforeRebuild) {
  const CodeRanges ranges;
  EXPECT_EQ(ranges.size(), 0u);
  EXPECT_EQ(ranges.classify(fn_addr(&anchor_function)), CodeRegion::kUnknown);
}

TEST(CodeRangesTest, ClassifiesAnchorLibcAndData) {
  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  EXPECT_GE(ranges.size(), 2u);

  EXPECT_EQ(ranges.classify(fn_addr(&anchor_function)), CodeRegion::kInterpreter);
  EXPECT_EQ(ranges.classify(fn_addr(&anchor_function) + 1), CodeRegion::kInterpreter);

  void* libc_write = libc_symbol("write");
  void* libc_malloc = libc_symbol("malloc");
  ASSERT_NE(libc_write, nullptr);
  ASSERT_NE(libc_malloc, nullptr);
  ASSERT_TRUE(basename_starts_with(object_of(libc_write), "libc")) << object_of(libc_write);
  EXPECT_EQ(ranges.classify(addr(libc_write)), CodeRegion::kSystem);
  EXPECT_EQ(ranges.classify(addr(libc_malloc)), CodeRegion::kSystem);
  // As the program sees them (through the GOT in a PIE, or a canonical PLT entry otherwise).
  const CodeRegion write_seen = ranges.classify(fn_addr(&::write));
  EXPECT_TRUE(write_seen == CodeRegion::kSystem || write_seen == CodeRegion::kInterpreter);

  int on_stack = 0;
  EXPECT_EQ(ranges.classify(addr(&on_stack)), CodeRegion::kUnknown);
  void* heap = std::malloc(64);
  EXPECT_EQ(ranges.classify(addr(heap)), CodeRegion::kUnknown);
  std::free(heap);
  static int in_data = 0;
  EXPECT_EQ(ranges.classify(addr(&in_data)), CodeRegion::kUnknown);
  EXPECT_EQ(ranges.classify(0), CodeRegion::kUnknown);
  EXPECT_EQ(ranges.classify(UINTPTR_MAX), CodeRegion::kUnknown);
}

TEST(CodeRangesTest, LibstdcxxAndLoaderAreSystem) {
  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  // The dynamic loader and the vDSO, found through the loader's own list.
  int loaders = 0;
  for (const Segment& s : executable_segments()) {
    if (basename_starts_with(s.name, "ld-linux") || basename_starts_with(s.name, "linux-vdso")) {
      ++loaders;
      EXPECT_EQ(ranges.classify(s.begin), CodeRegion::kSystem) << s.name;
    }
  }
  EXPECT_GE(loaders, 1);
  // A function surely defined in libstdc++ when it is shared.
  void* handle = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) GTEST_SKIP() << "libstdc++ is not a shared object here";
  void* sym = dlsym(handle, "_ZSt9terminatev");  // std::terminate()
  dlclose(handle);
  ASSERT_NE(sym, nullptr);
  ASSERT_TRUE(basename_starts_with(object_of(sym), "libstdc++")) << object_of(sym);
  EXPECT_EQ(ranges.classify(addr(sym)), CodeRegion::kSystem);
}

TEST(CodeRangesTest, AnchorObjectIsTheInterpreterEvenWhenSystemNamed) {
  // With the anchor in libc, libc is the "interpreter" (the anchor wins over the name).
  void* libc_write = libc_symbol("write");
  void* libc_malloc = libc_symbol("malloc");
  ASSERT_NE(libc_write, nullptr);
  CodeRanges ranges;
  ranges.rebuild(libc_write);
  EXPECT_EQ(ranges.classify(addr(libc_write)), CodeRegion::kInterpreter);
  EXPECT_EQ(ranges.classify(addr(libc_malloc)), CodeRegion::kInterpreter);
}

// An ordinary shared library of the system, loaded: its handle and one of its functions
// (both null when none of the candidates is installed).
struct Loaded {
  void* handle = nullptr;
  void* sym = nullptr;
  const char* symbol = nullptr;
};

Loaded load_ordinary_library() {
  const char* candidates[] = {"libz.so.1",     "libexpat.so.1", "libffi.so.8",
                              "libbz2.so.1.0", "liblzma.so.5",  "libgmp.so.10"};
  const char* symbols[] = {"zlibVersion",      "XML_ParserCreate",    "ffi_call",
                           "BZ2_bzlibVersion", "lzma_version_number", "__gmpz_init"};
  Loaded out;
  for (size_t i = 0; i < std::size(candidates) && out.sym == nullptr; ++i) {
    out.handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (out.handle != nullptr) {
      out.sym = dlsym(out.handle, symbols[i]);
      out.symbol = symbols[i];
      if (out.sym == nullptr) dlclose(out.handle);
    }
  }
  if (out.sym == nullptr) out.handle = nullptr;
  return out;
}

TEST(CodeRangesTest, OtherSharedObjectsAreNative) {
  const Loaded lib = load_ordinary_library();
  void* handle = lib.handle;
  void* sym = lib.sym;
  if (sym == nullptr) GTEST_SKIP() << "no ordinary shared library to load";

  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  EXPECT_EQ(ranges.classify(addr(sym)), CodeRegion::kNative) << object_of(sym);
  // Classification follows rebuild(): the anchor object is the interpreter instead.
  CodeRanges anchored;
  anchored.rebuild(sym);
  EXPECT_EQ(anchored.classify(addr(sym)), CodeRegion::kInterpreter);
  dlclose(handle);
}

// A copy of the file at `from` at `to`; false if it could not be made.
bool copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  return in.good() && out.good();
}

TEST(CodeRangesTest, StandardLibraryExtensionsAreNotALibrarysCode) {
  // The same object twice: once where CPython keeps its standard library's extension
  // modules, once where a package's would be.
  const Loaded lib = load_ordinary_library();
  if (lib.sym == nullptr) GTEST_SKIP() << "no ordinary shared library to load";
  char dir_template[] = "/tmp/spyglass-ranges-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string dynload_dir = dir + "/lib-dynload";
  ASSERT_EQ(mkdir(dynload_dir.c_str(), 0700), 0);
  const std::string dynload = dynload_dir + "/copy.so";
  const std::string package = dir + "/package.so";
  ASSERT_TRUE(copy_file(object_of(lib.sym), dynload));
  ASSERT_TRUE(copy_file(object_of(lib.sym), package));
  void* stdlib_handle = dlopen(dynload.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* package_handle = dlopen(package.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(stdlib_handle, nullptr) << dlerror();
  ASSERT_NE(package_handle, nullptr) << dlerror();
  void* in_stdlib = dlsym(stdlib_handle, lib.symbol);
  void* in_package = dlsym(package_handle, lib.symbol);
  ASSERT_NE(in_stdlib, in_package);

  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  EXPECT_EQ(ranges.classify(addr(in_stdlib)), CodeRegion::kNative);
  EXPECT_EQ(ranges.classify(addr(in_package)), CodeRegion::kNative);
  EXPECT_FALSE(ranges.is_library(addr(in_stdlib))) << object_of(in_stdlib);
  EXPECT_TRUE(ranges.is_library(addr(in_package))) << object_of(in_package);
  EXPECT_TRUE(ranges.is_library(addr(lib.sym)));
  EXPECT_FALSE(ranges.is_library(fn_addr(&anchor_function)));  // the interpreter
  EXPECT_FALSE(ranges.is_library(addr(libc_symbol("write"))));
  EXPECT_FALSE(ranges.is_library(0));

  dlclose(stdlib_handle);
  dlclose(package_handle);
  dlclose(lib.handle);
  unlink(dynload.c_str());
  unlink(package.c_str());
  rmdir(dynload_dir.c_str());
  rmdir(dir.c_str());
}

TEST(CodeRangesTest, PackageKeyIsTheInstalledPackage) {
  EXPECT_EQ(package_key("/v/lib/python3.11/site-packages/polars/_polars.abi3.so"), "polars");
  EXPECT_EQ(package_key("/v/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"), "torch");
  // auditwheel's vendored libraries count as their package's.
  EXPECT_EQ(package_key("/v/lib/python3.11/site-packages/numpy.libs/libopenblas.so"), "numpy");
  EXPECT_EQ(package_key("/usr/lib/python3/dist-packages/numpy/core/_umath.so"), "numpy");
  // A single-file extension module is a package of its own.
  EXPECT_EQ(package_key("/v/lib/python3.11/site-packages/_cffi_backend.so"), "_cffi_backend.so");
  // Elsewhere, the object's directory.
  EXPECT_EQ(package_key("/tmp/build/spin_ext.so"), "/tmp/build");
  EXPECT_EQ(package_key("/usr/lib/x86_64-linux-gnu/libz.so.1"), "/usr/lib/x86_64-linux-gnu");
  EXPECT_EQ(package_key("libfoo.so"), "libfoo.so");
  EXPECT_EQ(package_key(""), "");
}

TEST(CodeRangesTest, InstalledPackageOfPythonFilesMatchesItsNativeCode) {
  const uint64_t pandas = installed_package("/v/lib/python3.11/site-packages/pandas/io/common.py");
  EXPECT_NE(pandas, 0u);
  EXPECT_EQ(installed_package("/v/lib/python3.11/site-packages/pandas/_libs/lib.so"), pandas);
  EXPECT_EQ(installed_package("/usr/lib/python3/dist-packages/pandas/core/frame.py"), pandas);
  EXPECT_NE(installed_package("/v/lib/python3.11/site-packages/numpy/core/numeric.py"), pandas);
  // The program's own files and the standard library's are no installed package's.
  EXPECT_EQ(installed_package("/home/me/app/main.py"), 0u);
  EXPECT_EQ(installed_package("/usr/lib/python3.11/concurrent/futures/thread.py"), 0u);
  EXPECT_EQ(installed_package("<frozen importlib._bootstrap>"), 0u);
}

TEST(CodeRangesTest, SegmentBoundariesMatchTheLoader) {
  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  const std::vector<Segment> segs = executable_segments();
  ASSERT_FALSE(segs.empty());
  EXPECT_EQ(ranges.size(), segs.size());
  for (const Segment& s : segs) {
    const CodeRegion first = ranges.classify(s.begin);
    EXPECT_NE(first, CodeRegion::kUnknown) << s.name;
    EXPECT_EQ(ranges.classify(s.end - 1), first) << s.name;
    EXPECT_EQ(ranges.classify((s.begin + s.end) / 2), first) << s.name;
    // Just past the segment: unknown unless another executable segment starts right there.
    const bool adjacent = std::any_of(segs.begin(), segs.end(), [&](const Segment& o) {
      return o.begin <= s.end && s.end < o.end;
    });
    if (!adjacent) {
      EXPECT_EQ(ranges.classify(s.end), CodeRegion::kUnknown) << s.name;
    }
    if (s.begin > 0) {
      const bool before = std::any_of(segs.begin(), segs.end(), [&](const Segment& o) {
        return o.begin <= s.begin - 1 && s.begin - 1 < o.end;
      });
      if (!before) {
        EXPECT_EQ(ranges.classify(s.begin - 1), CodeRegion::kUnknown) << s.name;
      }
    }
  }
}

TEST(CodeRangesTest, RebuildReplacesTheTable) {
  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  const size_t n = ranges.size();
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  EXPECT_EQ(ranges.size(), n);  // not appended to
}

}  // namespace
}  // namespace spyglass::platform
