// Tests of naming native code: ELF symbol tables, the loaded-object cache, demangling, and
// the native breakdowns a profile is written with.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/file_filter.hpp"
#include "core/native_costs.hpp"
#include "core/profile_model.hpp"
#include "core/stack_table.hpp"
#include "json_test_util.hpp"
#include "platform/native_symbols.hpp"

namespace spyglass_native_test {
// A namespaced function with external linkage, to be found in the test binary's .symtab.
__attribute__((noinline)) int shaped_function(int x) {
  static volatile int sink = 0;
  sink = sink + x;
  return sink;
}
}  // namespace spyglass_native_test

namespace spyglass {
namespace {

using platform::NativeSymbolizer;
using spyglass_test::JsonParser;
using spyglass_test::JsonValue;

uintptr_t address_of(int (*f)(int)) { return reinterpret_cast<uintptr_t>(f); }

TEST(NativeSymbols, NamesAFunctionOfTheExecutableAndDemanglesIt) {
  NativeSymbolizer symbols;
  const uintptr_t pc = address_of(&spyglass_native_test::shaped_function) + 2;
  const uint32_t id = symbols.resolve(pc);
  const platform::NativeSymbol& s = symbols.symbol(id);
  EXPECT_EQ(platform::demangle(s.name), "spyglass_native_test::shaped_function(int)") << s.name;
  EXPECT_EQ(s.library, "core_tests");
  EXPECT_EQ(symbols.resolve(pc), id) << "the same address named twice differently";
  EXPECT_EQ(symbols.resolve(address_of(&spyglass_native_test::shaped_function)), id)
      << "two addresses in one function are one symbol";
}

TEST(NativeSymbols, AddressInNoObjectIsAnonymous) {
  NativeSymbolizer symbols;
  // The first page is never an object's code.
  const uint32_t id = symbols.resolve(0x10);
  EXPECT_EQ(symbols.symbol(id).name, NativeSymbolizer::kAnonymous);
  EXPECT_EQ(symbols.symbol(id).library, "");
}

TEST(NativeSymbols, LibraryLoadedAfterTheFirstLookupIsFound) {
  NativeSymbolizer symbols;
  (void)symbols.resolve(address_of(&spyglass_native_test::shaped_function));
  void* lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) GTEST_SKIP() << "no libz.so.1 to load";
  void* crc = dlsym(lib, "crc32");
  ASSERT_NE(crc, nullptr);
  const platform::NativeSymbol& s =
      symbols.symbol(symbols.resolve(reinterpret_cast<uintptr_t>(crc)));
  EXPECT_EQ(s.name, "crc32");
  EXPECT_EQ(s.library.rfind("libz.so", 0), 0u) << s.library;
  dlclose(lib);
}

TEST(NativeSymbols, TheVdsoIsNamedFromItsImageInMemory) {
  // time.perf_counter() and friends run clock_gettime in the vDSO, which has no file to
  // read: its samples were named "linux-vdso.so.1+0x..." before.
  const auto vdso = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  if (vdso == 0) GTEST_SKIP() << "no vDSO in this process";
  const std::vector<platform::ElfSymbol> functions = platform::read_vdso_functions();
  const auto clock = std::find_if(functions.begin(), functions.end(), [](const auto& f) {
    return f.name.find("clock_gettime") != std::string::npos;
  });
  ASSERT_NE(clock, functions.end()) << functions.size() << " functions in the vDSO";
  // The symbolizer reaches it through the loader's list, where the vDSO has a name but no
  // file: an address inside clock_gettime resolves to it.
  uintptr_t bias = 0;
  for (const platform::LoadedObject& o : platform::loaded_objects()) {
    if (platform::is_vdso(o.begin, o.end)) bias = o.base;
  }
  ASSERT_NE(bias, 0U) << "the loader does not list the vDSO";
  NativeSymbolizer symbols;
  const platform::NativeSymbol& s = symbols.symbol(symbols.resolve(bias + clock->value + 1));
  EXPECT_NE(s.name.find("clock_gettime"), std::string::npos) << s.name << " in " << s.library;
  EXPECT_NE(s.library.find("vdso"), std::string::npos) << s.library;
}

TEST(NativeSymbols, UnwindIndexListsFunctionStarts) {
  Dl_info info{};
  const auto fn = address_of(&spyglass_native_test::shaped_function);
  ASSERT_NE(dladdr(reinterpret_cast<void*>(fn), &info), 0);
  // The test binary is position-independent: its first segment is at its load base.
  const std::vector<uint64_t> starts = platform::read_function_starts("/proc/self/exe");
  ASSERT_FALSE(starts.empty());
  const uint64_t relative = fn - reinterpret_cast<uintptr_t>(info.dli_fbase);
  EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), relative));
  EXPECT_TRUE(platform::read_function_starts("/nonexistent").empty());
}

TEST(NativeSymbols, NearestSymbolRespectsSizes) {
  const std::vector<platform::ElfSymbol> table = {{0x100, 0x10, "a"}, {0x200, 0, "asm"}};
  EXPECT_EQ(platform::nearest_symbol(table, 0x50), nullptr);
  ASSERT_NE(platform::nearest_symbol(table, 0x10f), nullptr);
  EXPECT_EQ(platform::nearest_symbol(table, 0x10f)->name, "a");
  EXPECT_EQ(platform::nearest_symbol(table, 0x110), nullptr) << "past a sized symbol's end";
  ASSERT_NE(platform::nearest_symbol(table, 0x900), nullptr);
  EXPECT_EQ(platform::nearest_symbol(table, 0x900)->name, "asm") << "unsized: nearest below";
}

TEST(NativeSymbols, ProcedureLinkageStubsAreNamedForTheirTargets) {
  // This binary calls dladdr (in the C library) through a stub of its own; the unsized
  // _init just below the stubs took their time in libpython.
  const std::vector<platform::ElfSymbol> table = platform::read_elf_functions("/proc/self/exe");
  const auto stub = std::find_if(table.begin(), table.end(), [](const platform::ElfSymbol& s) {
    return s.name == "dladdr@plt";
  });
  ASSERT_NE(stub, table.end());
  const platform::ElfSymbol* found = platform::nearest_symbol(table, stub->value + 5);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "dladdr@plt");
  EXPECT_TRUE(std::is_sorted(table.begin(), table.end(),
                             [](const platform::ElfSymbol& a, const platform::ElfSymbol& b) {
                               return a.value < b.value;
                             }));
}

TEST(NativeSymbols, UnreadableFileHasNoSymbols) {
  EXPECT_TRUE(platform::read_elf_functions("/nonexistent/lib.so").empty());
  EXPECT_EQ(platform::demangle("plain_c"), "plain_c");
  EXPECT_EQ(platform::demangle("_Zbroken"), "_Zbroken");
}

const JsonValue& member(const JsonValue& v, const char* key) {
  const JsonValue* m = v.find(key);
  EXPECT_NE(m, nullptr) << key;
  static const JsonValue none;
  return m != nullptr ? *m : none;
}

TEST(NativeBreakdown, LinesStacksAndTheRunTableCarryOnlyNativeSamples) {
  const std::vector<CodeInfo> codes = {{"/proj/app.py", "main", 1}, {"/lib/x.py", "f", 1}};
  StackTable stacks;
  Times t;
  t.native_ns = 3000;
  const std::vector<FrameKey> at_app = {{0, 4}};
  const std::vector<FrameKey> via_lib = {{1, 9}, {0, 7}};
  const size_t a = stacks.add(at_app.data(), at_app.size(), false, t);
  const size_t b = stacks.add(via_lib.data(), via_lib.size(), false, t);
  const size_t native_thread = stacks.add(nullptr, 0, false, t);
  NativeCosts costs;
  costs.add(a, 0, 2000);
  costs.add(a, 1, 1000);
  costs.add(b, 0, 3000);
  costs.add(native_thread, 1, 3000);
  FilterConfig config;
  config.program_paths = {"/proj"};
  ProfileModel m = ProfileModel::build(stacks, codes, FileFilter(config), {});
  m.attach_native(costs, {{"sort_it", "libpython.so"}, {"ns::f()", "ext.so"}}, codes);
  const auto doc = JsonParser::parse(m.to_json({}, RunInfo{}, {}, stacks, codes));
  ASSERT_TRUE(doc.has_value());

  const JsonValue& lines = member(member(member(*doc, "files"), "/proj/app.py"), "lines");
  ASSERT_EQ(lines.array.size(), 2u);
  const JsonValue& line4 = lines.array[0];
  EXPECT_EQ(member(line4, "lineno").number, 4);
  const JsonValue& fns = member(line4, "native_functions");
  ASSERT_EQ(fns.array.size(), 2u);
  EXPECT_EQ(member(fns.array[0], "name").string, "sort_it") << "heaviest first";
  EXPECT_DOUBLE_EQ(member(fns.array[0], "cpu_s").number, 2e-6);
  EXPECT_EQ(member(fns.array[1], "library").string, "ext.so");
  EXPECT_EQ(member(fns.array[1], "samples").number, 1);
  // The library frame's line is not the user's: its time goes to main:7.
  EXPECT_EQ(member(lines.array[1], "lineno").number, 7);
  EXPECT_EQ(member(lines.array[1], "native_functions").array.size(), 1u);

  const JsonValue& run = member(*doc, "native_functions");
  ASSERT_EQ(run.array.size(), 2u);
  EXPECT_EQ(member(run.array[0], "name").string, "sort_it");
  EXPECT_DOUBLE_EQ(member(run.array[0], "cpu_s").number, 5e-6);
  EXPECT_EQ(member(run.array[0], "lines").array.size(), 2u);
  EXPECT_EQ(member(member(run.array[0], "lines").array[0], "lineno").number, 7);
  EXPECT_DOUBLE_EQ(member(run.array[1], "cpu_s").number, 4e-6) << "the native thread counts";
  EXPECT_EQ(member(run.array[1], "lines").array.size(), 1u) << "but leads to no line";

  size_t stacks_with_native = 0;
  for (const JsonValue& s : member(*doc, "stacks").array) {
    if (s.find("native") != nullptr) ++stacks_with_native;
  }
  EXPECT_EQ(stacks_with_native, 2u) << "the frameless stack is not written";
}

TEST(NativeBreakdown, LongListsEndInOneOtherEntryThatKeepsTheSum) {
  const std::vector<CodeInfo> codes = {{"/proj/app.py", "main", 1}};
  StackTable stacks;
  Times t;
  t.native_ns = 1;
  const std::vector<FrameKey> frames = {{0, 2}};
  const size_t stack = stacks.add(frames.data(), frames.size(), false, t);
  NativeCosts costs;
  std::vector<NativeFunction> names;
  uint64_t total = 0;
  for (uint32_t i = 0; i < 150; ++i) {
    costs.add(stack, i, 1000 + i);
    total += 1000 + i;
    names.push_back({"f" + std::to_string(i), "lib.so"});
  }
  FilterConfig config;
  config.program_paths = {"/proj"};
  ProfileModel m = ProfileModel::build(stacks, codes, FileFilter(config), {});
  m.attach_native(costs, names, codes);
  const auto doc = JsonParser::parse(m.to_json({}, RunInfo{}, {}, stacks, codes));
  ASSERT_TRUE(doc.has_value());
  const JsonValue& line = member(member(member(*doc, "files"), "/proj/app.py"), "lines").array[0];
  for (const JsonValue* list :
       {&member(line, "native_functions"), &member(*doc, "native_functions")}) {
    ASSERT_LT(list->array.size(), 150u);
    EXPECT_EQ(member(list->array.back(), "name").string, "[other]");
    EXPECT_EQ(member(list->array.front(), "name").string, "f149") << "heaviest first";
    double sum = 0;
    for (const JsonValue& f : list->array) sum += member(f, "cpu_s").number;
    EXPECT_NEAR(sum, static_cast<double>(total) / 1e9, 1e-12);
  }
}

TEST(NativeBreakdown, NoNativeSamplesWritesNoKeys) {
  const std::vector<CodeInfo> codes = {{"/proj/app.py", "main", 1}};
  StackTable stacks;
  Times t;
  t.python_ns = 10;
  const std::vector<FrameKey> frames = {{0, 2}};
  stacks.add(frames.data(), frames.size(), false, t);
  FilterConfig config;
  config.program_paths = {"/proj"};
  ProfileModel m = ProfileModel::build(stacks, codes, FileFilter(config), {});
  m.attach_native(NativeCosts{}, {}, codes);
  const std::string json = m.to_json({}, RunInfo{}, {}, stacks, codes);
  EXPECT_EQ(json.find("native_functions"), std::string::npos);
  EXPECT_EQ(json.find("\"native\""), std::string::npos);
}

TEST(NativeBreakdown, StacksKeepChainsLinesKeepSelfTime) {
  const std::vector<CodeInfo> codes = {{"/proj/app.py", "main", 1}};
  StackTable stacks;
  Times t;
  t.native_ns = 5000;
  const std::vector<FrameKey> frames = {{0, 3}};
  const size_t stack = stacks.add(frames.data(), frames.size(), false, t);
  NativeCosts costs;
  // compare <- sort <- sorted, twice; and sort alone (stopped in the sort itself).
  costs.add(stack, NativeChain{0, 1, 2}, NativeCost{3000, 3});
  costs.add(stack, NativeChain{1, 2}, NativeCost{2000, 2});
  FilterConfig config;
  config.program_paths = {"/proj"};
  ProfileModel m = ProfileModel::build(stacks, codes, FileFilter(config), {});
  m.attach_native(costs, {{"compare", "py"}, {"sort", "py"}, {"sorted", "py"}}, codes);
  const auto doc = JsonParser::parse(m.to_json({}, RunInfo{}, {}, stacks, codes));
  ASSERT_TRUE(doc.has_value());
  const JsonValue& entries = member(member(*doc, "stacks").array[0], "native");
  ASSERT_EQ(entries.array.size(), 2u);
  EXPECT_EQ(member(entries.array[0], "name").string, "compare");
  const JsonValue& callers = member(entries.array[0], "callers");
  ASSERT_EQ(callers.array.size(), 2u);
  EXPECT_EQ(member(callers.array[0], "name").string, "sorted") << "outermost first";
  EXPECT_EQ(member(callers.array[1], "name").string, "sort");
  EXPECT_EQ(member(member(entries.array[1], "callers").array[0], "name").string, "sorted");
  const JsonValue& line = member(member(member(*doc, "files"), "/proj/app.py"), "lines").array[0];
  const JsonValue& own = member(line, "native_functions");
  ASSERT_EQ(own.array.size(), 2u) << "callers are not self time";
  EXPECT_EQ(member(own.array[0], "name").string, "compare");
  EXPECT_EQ(member(own.array[1], "name").string, "sort");
}

}  // namespace
}  // namespace spyglass
