#include "core/file_filter.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace spyglass {
namespace {

constexpr const char* kSitePackages = "/venv/lib/python3.12/site-packages";
constexpr const char* kStdlib = "/usr/lib/python3.12";
constexpr const char* kSpyglass = "/venv/lib/python3.12/site-packages/spyglass";

// A typical run: the program in /home/u/proj, stdlib and a venv as libraries.
FilterConfig typical_config() {
  FilterConfig c;
  c.program_paths = {"/home/u/proj"};
  c.library_prefixes = {kStdlib, kSitePackages};
  c.internal_prefixes = {kSpyglass};
  return c;
}

TEST(FileFilterTest, ProgramFilesAreProfiledLibrariesAreNot) {
  const FileFilter f(typical_config());
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/main.py"));
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/pkg/sub/mod.py"));
  EXPECT_FALSE(f.is_profiled_file("/home/u/other/main.py"));
  EXPECT_FALSE(f.is_profiled_file("/usr/lib/python3.12/json/decoder.py"));
  EXPECT_FALSE(f.is_profiled_file("/venv/lib/python3.12/site-packages/requests/api.py"));
  EXPECT_FALSE(f.is_profiled_file("relative/main.py"));
  EXPECT_FALSE(f.is_profiled_file(""));
}

TEST(FileFilterTest, ConfigIsKept) {
  FilterConfig c = typical_config();
  c.only = {"x"};
  const FileFilter f(c);
  EXPECT_EQ(f.config().program_paths, c.program_paths);
  EXPECT_EQ(f.config().library_prefixes, c.library_prefixes);
  EXPECT_EQ(f.config().only, c.only);
}

TEST(FileFilterTest, ProgramDirInsideSitePackagesWinsWhenMoreSpecific) {
  FilterConfig c = typical_config();
  c.program_paths = {std::string(kSitePackages) + "/myproj"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/venv/lib/python3.12/site-packages/myproj/cli.py"));
  EXPECT_TRUE(f.is_profiled_file("/venv/lib/python3.12/site-packages/myproj/a/b.py"));
  EXPECT_FALSE(f.is_profiled_file("/venv/lib/python3.12/site-packages/requests/api.py"));
  EXPECT_FALSE(f.is_profiled_file("/venv/lib/python3.12/site-packages/myproj2/x.py"));
}

TEST(FileFilterTest, LibraryInsideProgramDirIsExcludedWhenMoreSpecific) {
  FilterConfig c;
  c.program_paths = {"/home/u/proj"};
  c.library_prefixes = {"/home/u/proj/.venv/lib/python3.12/site-packages", kStdlib};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/app.py"));
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/.venv/bin/tool.py"));  // not under the library
  EXPECT_FALSE(f.is_profiled_file("/home/u/proj/.venv/lib/python3.12/site-packages/np/core.py"));
}

TEST(FileFilterTest, LongestPrefixWinsAcrossSeveralPaths) {
  FilterConfig c;
  c.program_paths = {"/a", "/a/b/c"};
  c.library_prefixes = {"/a/b"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/a/x.py"));      // /a vs nothing
  EXPECT_FALSE(f.is_profiled_file("/a/b/x.py"));   // /a/b beats /a
  EXPECT_TRUE(f.is_profiled_file("/a/b/c/x.py"));  // /a/b/c beats /a/b
}

TEST(FileFilterTest, DirectoryBoundaryIsRespected) {
  FilterConfig c;
  c.program_paths = {"/a/b"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/a/b/x.py"));
  EXPECT_TRUE(f.is_profiled_file("/a/b"));
  EXPECT_FALSE(f.is_profiled_file("/a/bc/x.py"));
  EXPECT_FALSE(f.is_profiled_file("/a/bc"));
  EXPECT_FALSE(f.is_profiled_file("/a/b.py"));
  EXPECT_FALSE(f.is_profiled_file("/a"));
}

TEST(FileFilterTest, TrailingSlashPrefixesWork) {
  FilterConfig c;
  c.program_paths = {"/a/b/"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/a/b/x.py"));
  EXPECT_FALSE(f.is_profiled_file("/a/bc/x.py"));
  EXPECT_FALSE(f.is_profiled_file("/a/b"));
}

TEST(FileFilterTest, LibraryPrefixBoundaryIsRespected) {
  FilterConfig c;
  c.program_paths = {"/a"};
  c.library_prefixes = {"/a/lib"};
  const FileFilter f(c);
  EXPECT_FALSE(f.is_profiled_file("/a/lib/x.py"));
  EXPECT_TRUE(f.is_profiled_file("/a/library/x.py"));  // /a/lib is not a directory of it
  EXPECT_TRUE(f.is_profiled_file("/a/lib2/x.py"));
}

TEST(FileFilterTest, EmptyPrefixesMatchNothing) {
  FilterConfig c;
  c.program_paths = {"", "/p"};
  c.library_prefixes = {""};
  c.internal_prefixes = {""};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/p/x.py"));
  EXPECT_FALSE(f.is_profiled_file("/q/x.py"));
}

TEST(FileFilterTest, InternalPrefixesAreAlwaysExcluded) {
  FilterConfig c = typical_config();
  c.program_paths = {"/venv"};  // would otherwise cover spyglass itself
  c.profile_all = true;
  const FileFilter all(c);
  EXPECT_FALSE(all.is_profiled_file("/venv/lib/python3.12/site-packages/spyglass/api.py"));
  EXPECT_FALSE(all.is_profiled_file("/venv/lib/python3.12/site-packages/spyglass"));
  EXPECT_TRUE(all.is_profiled_file("/venv/lib/python3.12/site-packages/spyglass_extra/x.py"));
  EXPECT_TRUE(all.is_profiled_file("/venv/lib/python3.12/site-packages/requests/api.py"));

  c.only = {"spyglass"};
  const FileFilter only(c);
  EXPECT_FALSE(only.is_profiled_file("/venv/lib/python3.12/site-packages/spyglass/api.py"));

  c.only.clear();
  c.pseudo_files = {"/venv/lib/python3.12/site-packages/spyglass/api.py"};
  const FileFilter pseudo(c);
  EXPECT_FALSE(pseudo.is_profiled_file("/venv/lib/python3.12/site-packages/spyglass/api.py"));
}

TEST(FileFilterTest, ProfileAllIncludesLibraries) {
  FilterConfig c = typical_config();
  c.profile_all = true;
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/usr/lib/python3.12/json/decoder.py"));
  EXPECT_TRUE(f.is_profiled_file("/venv/lib/python3.12/site-packages/requests/api.py"));
  EXPECT_TRUE(f.is_profiled_file("/somewhere/else.py"));
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/main.py"));
  EXPECT_FALSE(f.is_profiled_file(""));
}

TEST(FileFilterTest, OnlyRestrictsToSubstrings) {
  FilterConfig c = typical_config();
  c.only = {"proj/core", "requests/"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/core/a.py"));
  EXPECT_FALSE(f.is_profiled_file("/home/u/proj/util.py"));  // under the program, not listed
  // --profile-only selects by substring wherever the file lives, libraries included.
  EXPECT_TRUE(f.is_profiled_file("/venv/lib/python3.12/site-packages/requests/api.py"));
  EXPECT_FALSE(f.is_profiled_file("/venv/lib/python3.12/site-packages/urllib3/pool.py"));
}

TEST(FileFilterTest, ExcludeRemovesSubstringsAndBeatsEverythingElse) {
  FilterConfig c = typical_config();
  c.exclude = {"/tests/", "<string>"};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/a.py"));
  EXPECT_FALSE(f.is_profiled_file("/home/u/proj/tests/test_a.py"));

  c.only = {"proj"};
  c.pseudo_files = {"<string>"};
  c.profile_all = true;
  const FileFilter g(c);
  EXPECT_TRUE(g.is_profiled_file("/home/u/proj/a.py"));
  EXPECT_FALSE(g.is_profiled_file("/home/u/proj/tests/test_a.py"));  // beats only
  EXPECT_FALSE(g.is_profiled_file("<string>"));                      // beats pseudo files

  FilterConfig all;
  all.profile_all = true;
  all.exclude = {"vendor"};
  const FileFilter h(all);
  EXPECT_FALSE(h.is_profiled_file("/x/vendor/y.py"));  // beats profile_all
  EXPECT_TRUE(h.is_profiled_file("/x/y.py"));
}

TEST(FileFilterTest, EmptySubstringsAreIgnored) {
  FilterConfig c = typical_config();
  c.exclude = {""};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/a.py"));
}

TEST(FileFilterTest, PseudoFilesOnlyWhenListed) {
  FilterConfig c = typical_config();
  const FileFilter plain(c);
  EXPECT_FALSE(plain.is_profiled_file("<string>"));
  EXPECT_FALSE(plain.is_profiled_file("<stdin>"));
  EXPECT_FALSE(plain.is_profiled_file("<frozen importlib._bootstrap>"));

  c.pseudo_files = {"<string>"};
  const FileFilter listed(c);
  EXPECT_TRUE(listed.is_profiled_file("<string>"));
  EXPECT_FALSE(listed.is_profiled_file("<stdin>"));
  EXPECT_FALSE(listed.is_profiled_file("<string>x"));  // exact match only
  EXPECT_FALSE(listed.is_profiled_file("<frozen importlib._bootstrap>"));
  EXPECT_TRUE(listed.is_profiled_file("/home/u/proj/main.py"));

  c.pseudo_files = {"<ipython-input-*"};
  const FileFilter cells(c);
  EXPECT_TRUE(cells.is_profiled_file("<ipython-input-3-85f8fde3ffa6>"));
  EXPECT_TRUE(cells.is_profiled_file("<ipython-input-*"));
  EXPECT_FALSE(cells.is_profiled_file("<ipython-inpu"));
  EXPECT_FALSE(cells.is_profiled_file("<string>"));
}

TEST(FileFilterTest, ProfiledFunctionsNarrowTheReport) {
  FilterConfig c = typical_config();
  c.functions = {{"/home/u/proj/a.py", 10}, {"<string>", 1}, {"/usr/lib/python3.12/json/x.py", 3}};
  const FileFilter f(c);
  EXPECT_TRUE(f.is_profiled("/home/u/proj/a.py", 10));
  EXPECT_FALSE(f.is_profiled("/home/u/proj/a.py", 11));  // another function of the same file
  EXPECT_FALSE(f.is_profiled("/home/u/proj/b.py", 10));  // same line, other file
  EXPECT_FALSE(f.is_profiled("/home/u/proj/a.py/", 10));
  EXPECT_TRUE(f.is_profiled("<string>", 1));
  // An explicitly decorated function counts even where file rules would say no.
  EXPECT_TRUE(f.is_profiled("/usr/lib/python3.12/json/x.py", 3));
  // The file-level verdict is unaffected by the narrowing.
  EXPECT_TRUE(f.is_profiled_file("/home/u/proj/b.py"));
  EXPECT_FALSE(f.is_profiled_file("/usr/lib/python3.12/json/x.py"));
}

TEST(FileFilterTest, WithoutFunctionsIsProfiledFollowsTheFile) {
  const FileFilter f(typical_config());
  for (int line : {0, 1, 10, 12345}) {
    EXPECT_TRUE(f.is_profiled("/home/u/proj/main.py", line));
    EXPECT_FALSE(f.is_profiled("/usr/lib/python3.12/os.py", line));
    EXPECT_FALSE(f.is_profiled("/venv/lib/python3.12/site-packages/spyglass/api.py", line));
  }
}

}  // namespace
}  // namespace spyglass
