#include "io/glob.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class GlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sluice_glob_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    for (const char* f : {"a.rec", "b.rec", "c.txt", "ab.rec", "x1", "x2", "x10", ".hidden.rec",
                          "d1/p.rec", "d1/q.txt", "d2/p.rec", "e/p.rec", "d1/sub/deep.rec"}) {
      Touch(f);
    }
  }
  void TearDown() override {
    if (!root_.empty()) {
      std::error_code ec;
      fs::permissions(root_ + "/locked", fs::perms::owner_all, ec);
      fs::remove_all(root_, ec);
    }
  }
  void Touch(const std::string& rel) {
    const fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  std::string P(const std::string& rel) const { return root_ + "/" + rel; }
  std::vector<std::string> Ps(std::vector<std::string> rels) const {
    for (auto& r : rels) r = P(r);
    return rels;
  }
  std::vector<std::string> Match(const std::string& rel_pattern) const {
    absl::StatusOr<std::vector<std::string>> r = Glob(P(rel_pattern));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<std::string>{};
  }

  std::string root_;
};

TEST_F(GlobTest, Star) {
  EXPECT_EQ(Match("*.rec"), Ps({"a.rec", "ab.rec", "b.rec"}));  // Not .hidden.rec.
  EXPECT_EQ(Match(".*.rec"), Ps({".hidden.rec"}));
}

TEST_F(GlobTest, QuestionMark) {
  EXPECT_EQ(Match("?.rec"), Ps({"a.rec", "b.rec"}));
  EXPECT_EQ(Match("x?"), Ps({"x1", "x2"}));
  EXPECT_EQ(Match("x??"), Ps({"x10"}));
}

TEST_F(GlobTest, BracketSetsAndNegation) {
  EXPECT_EQ(Match("[ab].rec"), Ps({"a.rec", "b.rec"}));
  EXPECT_EQ(Match("[!a].rec"), Ps({"b.rec"}));
  EXPECT_EQ(Match("[!a]*.*"), Ps({"b.rec", "c.txt"}));
  EXPECT_EQ(Match("x[0-9]"), Ps({"x1", "x2"}));
}

TEST_F(GlobTest, WildcardsInDirectoryComponents) {
  EXPECT_EQ(Match("d*/p.rec"), Ps({"d1/p.rec", "d2/p.rec"}));
  EXPECT_EQ(Match("?/p.rec"), Ps({"e/p.rec"}));
  EXPECT_EQ(Match("d[1]/*"), Ps({"d1/p.rec", "d1/q.txt", "d1/sub"}));
  EXPECT_EQ(Match("*/*/*.rec"), Ps({"d1/sub/deep.rec"}));
}

TEST_F(GlobTest, SeveralPatternsAreMergedSortedAndDeduplicated) {
  const std::vector<std::string> patterns = {P("x*"), P("*.rec"), P("a*"), P("x1"), P("d2/*")};
  absl::StatusOr<std::vector<std::string>> r = Glob(patterns);
  ASSERT_TRUE(r.ok()) << r.status();
  // Bytewise: "ab.rec" < "b.rec" < "d2/..." < "x1" < "x10" < "x2".
  EXPECT_EQ(*r, Ps({"a.rec", "ab.rec", "b.rec", "d2/p.rec", "x1", "x10", "x2"}));
  absl::StatusOr<std::vector<std::string>> none = Glob(absl::Span<const std::string>());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(GlobTest, SortIsBytewiseWhateverTheLocale) {
  Touch("B.rec");
  Touch("_.rec");
  // Bytewise: 'B' (0x42) < '_' (0x5f) < 'a' (0x61); a collating locale would interleave cases.
  EXPECT_EQ(Match("*.rec"), Ps({"B.rec", "_.rec", "a.rec", "ab.rec", "b.rec"}));
}

TEST_F(GlobTest, PlainPathMustExist) {
  EXPECT_EQ(Match("c.txt"), Ps({"c.txt"}));
  absl::StatusOr<std::vector<std::string>> r = Glob(P("nope.txt"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("no such file: '" + P("nope.txt") + "'"));
}

TEST_F(GlobTest, PatternMatchingNothingIsNotFoundNamingIt) {
  absl::StatusOr<std::vector<std::string>> r =
      Glob(std::vector<std::string>{P("*.rec"), P("*.zip")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("no files match '" + P("*.zip") + "'"));
  r = Glob(P("missing_dir/*.rec"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr(P("missing_dir/*.rec")));
  r = Glob("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GlobTest, UnreadableDirectoryIsAnErrorNotASilentGap) {
  Touch("locked/z.rec");
  ASSERT_EQ(chmod(P("locked").c_str(), 0), 0);
  const std::string pattern = P("*/*.rec");  // Must list every directory, "locked" too.
  auto check = [&]() -> std::string {
    absl::StatusOr<std::vector<std::string>> r = Glob(pattern);
    if (r.ok()) return "matched " + std::to_string(r->size()) + " paths";
    if (r.status().code() != absl::StatusCode::kPermissionDenied ||
        r.status().message().find("cannot read directory '" + P("locked") + "'") ==
            std::string::npos) {
      return r.status().ToString();
    }
    return "";
  };
  if (geteuid() != 0) {
    EXPECT_EQ(check(), "");
    return;
  }
  // Root reads every directory: check as an unprivileged user, in a child.
  ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  EXPECT_EXIT(
      {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
        const std::string error = check();
        if (!error.empty()) fprintf(stderr, "%s\n", error.c_str());
        _exit(error.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sluice
