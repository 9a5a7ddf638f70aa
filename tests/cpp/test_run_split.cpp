#include <gtest/gtest.h>

#include <vector>

#include "launcher/run_split.hpp"

namespace {

int split(std::vector<const char*> args) {
  args.insert(args.begin(), "spyglass");
  args.push_back(nullptr);
  return spyglass::launcher::run_target_index(static_cast<int>(args.size()) - 1, args.data());
}

}  // namespace

TEST(RunSplit, FindsTheScriptModuleOrCode) {
  EXPECT_EQ(split({"run", "app.py", "-o", "x"}), 2);
  EXPECT_EQ(split({"run", "-o", "p.json", "--cpu-only", "app.py"}), 5);
  EXPECT_EQ(split({"run", "-m", "json.tool", "--sort-keys"}), 2);
  EXPECT_EQ(split({"run", "--interval", "0.01", "-c", "pass"}), 4);
}

TEST(RunSplit, HtmlTakesOnlyAnHtmlNameForItsValue) {
  EXPECT_EQ(split({"run", "--html", "app.py"}), 3);
  EXPECT_EQ(split({"run", "--html", "r.HTML", "app.py"}), 4);
  EXPECT_EQ(split({"run", "--html=r.txt", "app.py"}), 3);
  EXPECT_EQ(split({"run", "--", "app.py"}), 3);  // options end: the script is next
  EXPECT_EQ(split({"run", "-o", "p.json", "--", "app.py", "-o"}), 5);
}

TEST(RunSplit, LeavesEverythingElseToPython) {
  EXPECT_EQ(split({"run"}), -1);
  EXPECT_EQ(split({"view", "p.json"}), -1);
  EXPECT_EQ(split({"run", "--help"}), -1);
  EXPECT_EQ(split({"run", "-", "arg"}), -1);       // the program is on stdin
  EXPECT_EQ(split({"run", "--", "-app.py"}), -1);  // python would take it for an option
  EXPECT_EQ(split({"run", "--"}), -1);
  EXPECT_EQ(split({"run", "-mjson.tool"}), -1);
  EXPECT_EQ(split({"run", "--htm", "app.py"}), -1);             // argparse refuses abbreviations
  EXPECT_EQ(split({"run", "-o", "--cpu-only", "app.py"}), -1);  // a value like an option
  EXPECT_EQ(split({"run", "-m"}), -1);
  EXPECT_EQ(split({"run", "--cpu-only"}), -1);
}
