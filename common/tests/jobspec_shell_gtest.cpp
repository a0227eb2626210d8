// kernel.flags, kernel.defines (names and values) and kernel.entry carry no shell syntax: nvcc
// runs its build steps through a shell, with a -D value inside double quotes (issue 49, point 3).
// Every refused character, in every field, at the parser (the CLI's and kfleetd's check).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kfleet/common/compile_flags.hpp"
#include "kfleet/common/jobspec.hpp"
#include "shell_characters.hpp"
#include "test_paths.hpp"
#include "spec_issues.hpp"

namespace kfleet {
namespace {

using kfleet::testing::find_issue;

std::string job_with(const std::string& kernel_tail) {
  return "name: t/shell\ntarget: {gpu: L4}\n"
         "kernel: {family: attention, language: cuda, sources: [k.cu], " + kernel_tail + "}\n";
}

using testing::Refused;
const std::vector<Refused>& refused() { return testing::refused_shell_characters(); }

TEST(JobSpecShell, EveryRefusedCharacterInADefineValue) {
  for (const auto& c : refused()) {
    const std::string value = "64" + c.raw + "x";
    auto p = parse_job_spec(job_with("defines: {TILE: \"64" + c.yaml + "x\"}"), "d.yaml");
    ASSERT_FALSE(p.ok()) << "accepted " << c.shown;
    const SpecIssue* i = find_issue(p, "kernel.defines.TILE");
    ASSERT_NE(i, nullptr) << c.shown << "\n" << p.error_text();
    EXPECT_NE(i->message.find("'" + shown_safely(value) + "' has " + c.shown + ", which " + c.why + ";"),
              std::string::npos) << i->message;
    EXPECT_NE(i->message.find("a define value may hold only ASCII letters, digits and _ @ % + = : . / -"),
              std::string::npos) << i->message;
    EXPECT_EQ(i->message.find('\n'), std::string::npos) << "one line: " << i->message;
  }
}

TEST(JobSpecShell, EveryRefusedCharacterInAFlag) {
  for (const auto& c : refused()) {
    for (const std::string& flag : {"-DTILE=64" + c.raw, "-Wno-x" + c.raw + "y"}) {
      std::string yaml = flag;
      yaml.replace(yaml.find(c.raw), c.raw.size(), c.yaml);
      auto p = parse_job_spec(job_with("flags: [-O3, \"" + yaml + "\"]"), "f.yaml");
      ASSERT_FALSE(p.ok()) << "accepted " << c.shown << " in " << flag;
      const SpecIssue* i = find_issue(p, "kernel.flags[1]");
      ASSERT_NE(i, nullptr) << c.shown << "\n" << p.error_text();
      EXPECT_NE(i->message.find("'" + shown_safely(flag) + "' has " + c.shown + ", which " + c.why + ";"),
                std::string::npos) << i->message;
      EXPECT_NE(i->message.find("a flag may hold only"), std::string::npos) << i->message;
    }
  }
}

TEST(JobSpecShell, EveryRefusedCharacterInADefineNameOrTheEntry) {
  for (const auto& c : refused()) {
    const std::string name = "A" + c.raw + "B";
    auto d = parse_job_spec(job_with("defines: {\"A" + c.yaml + "B\": 1}"), "n.yaml");
    ASSERT_FALSE(d.ok()) << "accepted the name " << c.shown;
    const SpecIssue* i = find_issue(d, "kernel.defines." + shown_safely(name));
    ASSERT_NE(i, nullptr) << c.shown << "\n" << d.error_text();
    EXPECT_NE(i->message.find("is not a C identifier (it has " + c.shown + ", which " + c.why + ")"),
              std::string::npos)
        << i->message;

    auto e = parse_job_spec(job_with("entry: \"k" + c.yaml + "x\""), "e.yaml");
    ASSERT_FALSE(e.ok()) << "accepted the entry " << c.shown;
    const SpecIssue* j = find_issue(e, "kernel.entry");
    ASSERT_NE(j, nullptr) << c.shown << "\n" << e.error_text();
    EXPECT_NE(j->message.find("is not a C identifier (it has " + c.shown + ", which " + c.why + ")"),
              std::string::npos)
        << j->message;
    EXPECT_NE(j->message.find("-DKFLEET_ATTENTION_ENTRY=<entry>"), std::string::npos) << j->message;
  }
}

// Where '=' and ',' matter: '=' is the -DNAME=VALUE separator and may follow it, but is no part
// of a name; nvcc splits a -D value at commas into more defines.
TEST(JobSpecShell, EqualsAndCommaWhereTheyMatter) {
  auto comma = parse_job_spec(job_with("defines: {A: \"1,B=2\"}"), "c.yaml");
  ASSERT_FALSE(comma.ok());
  const SpecIssue* i = find_issue(comma, "kernel.defines.A");
  ASSERT_NE(i, nullptr) << comma.error_text();
  EXPECT_NE(i->message.find("U+002C ',', which nvcc takes as the start of another define"),
            std::string::npos) << i->message;
  auto comma_flag = parse_job_spec(job_with("flags: [\"-DA=1,B=2\"]"), "c.yaml");
  ASSERT_FALSE(comma_flag.ok());
  EXPECT_NE(find_issue(comma_flag, "kernel.flags[0]"), nullptr) << comma_flag.error_text();

  auto eq_name = parse_job_spec(job_with("defines: {\"A=B\": 1}"), "e.yaml");
  ASSERT_FALSE(eq_name.ok());
  EXPECT_NE(find_issue(eq_name, "kernel.defines.A=B"), nullptr) << eq_name.error_text();
  for (const char* entry : {"1k", "", "k-x", "k=x", "k.x"})
    EXPECT_FALSE(parse_job_spec(job_with(std::string("entry: \"") + entry + "\""), "e.yaml").ok()) << entry;
  EXPECT_FALSE(parse_job_spec(job_with("defines: {1A: 1}"), "e.yaml").ok());
  EXPECT_FALSE(parse_job_spec(job_with("flags: [-UNDEBUG=1]"), "u.yaml").ok());

  auto fine = parse_job_spec(
      job_with("entry: _fa_s512_v3, defines: {A: \"x=y\", B: -1.5e-3, C: true, D: , E: \"a/b:c@d%e+f\", "
               "KFLEET_FAULT: 6}, flags: [-O3, -DT=a=b, -DU, -UNDEBUG, -maxrregcount=16, "
               "-Werror=shadow, -std=c++17, -Iinclude/x, -Xptxas, -v]"),
      "ok.yaml");
  ASSERT_TRUE(fine.ok()) << fine.error_text();
  EXPECT_EQ(fine.spec->kernel.defines[0], (std::pair<std::string, std::string>{"A", "x=y"}));
}

// The issue carries the file, line and column of the offending value, the field and the value.
TEST(JobSpecShell, TheIssueSaysWhereWhatAndWhichCharacter) {
  const std::string yaml = "name: t/shell\ntarget: {gpu: L4}\nkernel:\n  family: attention\n"
                           "  language: cuda\n  sources: [k.cu]\n  entry: fa\n  defines:\n"
                           "    STAGES: 2\n    TILE: \"64$(touch /tmp/x)\"\n  flags:\n"
                           "    - -O3\n    - -lineinfo\n    - \"-DX=`id`\"\n";
  auto p = parse_job_spec(yaml, "jobs/x.yaml");
  ASSERT_FALSE(p.ok());
  const std::string text = p.error_text();
  EXPECT_NE(text.find("jobs/x.yaml:10:11: kernel.defines.TILE: '64$(touch /tmp/x)' has U+0024 '$', "
                      "which a shell expands, even inside double quotes; a define value may hold "
                      "only ASCII letters, digits and _ @ % + = : . / - (nvcc runs its build steps "
                      "through a shell)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("jobs/x.yaml:14:7: kernel.flags[2]: '-DX=`id`' has U+0060 '`', which a shell "
                      "runs as a command, even inside double quotes"),
            std::string::npos) << text;
}

// jobs/bad/shell-syntax.yaml (also a seed of the job_yaml fuzz corpus): every field at once.
TEST(JobSpecShell, TheBadExampleHasAnIssuePerField) {
  auto p = parse_job_spec_file((testing::source_dir() / "jobs/bad/shell-syntax.yaml").string());
  ASSERT_FALSE(p.ok());
  std::vector<std::string> where;
  for (const auto& i : p.issues) where.push_back(std::to_string(i.line) + " " + i.field);
  EXPECT_EQ(where, (std::vector<std::string>{"9 kernel.entry", "11 kernel.defines.TILE",
                                             "12 kernel.defines.X;Y", "13 kernel.flags[1]"}))
      << p.error_text();
}

// kfleetd reads a JSON job through the same parser (job_spec_from_json), and so does the agent
// with the spec of its lease: the JSON form is refused the same way.
TEST(JobSpecShell, TheJsonFormIsCheckedToo) {
  nlohmann::json j = {{"name", "t/shell"},
                      {"target", {{"gpu", "L4"}}},
                      {"kernel", {{"family", "attention"}, {"language", "cuda"},
                                  {"sources", {"k.cu"}}, {"defines", {{"X", "$(id)"}}}}}};
  auto r = job_spec_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kernel.defines.X: '$(id)' has U+0024 '$'"), std::string::npos)
      << r.error().message;
  j["kernel"]["defines"] = {{"X", "1"}};
  j["kernel"]["entry"] = "k;id";
  r = job_spec_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kernel.entry: 'k;id' is not a C identifier"), std::string::npos)
      << r.error().message;
  j["kernel"]["entry"] = "k";
  EXPECT_TRUE(job_spec_from_json(j).ok());
}

TEST(JobSpecShell, ValuesAreShownOnOneLineAndCut) {
  EXPECT_EQ(shown_safely("a\nb\x1b[31m\\"), "a\\nb\\x1B[31m\\\\");
  EXPECT_EQ(shown_safely(std::string(100, 'x'), 10), "xxxxxxxxxx...");
  EXPECT_EQ(shown_safely(std::string(10, 'x'), 10), "xxxxxxxxxx");
  EXPECT_EQ(shown_safely(" ~\x7F\x80"), " ~\\x7F\\x80");
  auto p = define_value_problem("\xFF");
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find("'\\xFF' has the byte 0xFF, which is not UTF-8"), std::string::npos) << *p;
}

// Every byte, at the edges of each range the checks allow: a value, a flag and a name accept
// exactly the characters their messages list, and no neighbour of a range's first or last one.
TEST(JobSpecShell, EachByteIsAllowedExactlyWhereTheMessagesSayItIs) {
  const std::string value_set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:./-";
  const std::string name_set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
  for (int b = 1; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const bool in_value = value_set.find(c) != std::string::npos;
    const bool in_name = name_set.find(c) != std::string::npos;
    const std::string mid = std::string("a") + c + "b";
    EXPECT_EQ(!define_value_problem(mid).has_value(), in_value) << "byte " << b;
    EXPECT_EQ(!compile_flags_problem({"-DX=a" + std::string(1, c)}).has_value(), in_value)
        << "byte " << b;
    EXPECT_EQ(!define_name_problem(mid).has_value(), in_name) << "byte " << b;
    EXPECT_EQ(!entry_problem(std::string(1, c) + "k").has_value(), in_name && !(c >= '0' && c <= '9'))
        << "byte " << b;
  }
  for (const std::string name : {"0k", "9k"})
    EXPECT_NE(define_name_problem(name).value_or("").find("'" + name + "' is not a C identifier (it starts with a digit)"),
              std::string::npos) << name;
}

// A refused character is named as the code point a terminal would show, or as the byte where the
// text is not UTF-8: at each edge of each sequence length, overlong forms, surrogates and the
// end of Unicode.
TEST(JobSpecShell, RefusedCharactersAreDecodedAtTheEdgesOfUtf8) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\x7F", "U+007F, which is a control character"},
      {"\x80", "the byte 0x80, which is not UTF-8"},
      {"\xC1\xBF", "the byte 0xC1, which is not UTF-8"},        // overlong U+007F
      {std::string(1, '\0'), "U+0000, which is a control character"},
      {"\xC2\x80", "U+0080, which is a control character"},
      {"\xC2\x9F", "U+009F, which is a control character"},
      {"\xC2\xA0", "U+00A0, which is not ASCII"},
      {"\xDF\xBF", "U+07FF, which is not ASCII"},
      {"\xE0\x9F\xBF", "the byte 0xE0, which is not UTF-8"},    // overlong U+07FF
      {"\xE0\xA0\x80", "U+0800, which is not ASCII"},
      {"\xED\x9F\xBF", "U+D7FF, which is not ASCII"},
      {"\xED\xA0\x80", "the byte 0xED, which is not UTF-8"},    // U+D800, a surrogate
      {"\xED\xBF\xBF", "the byte 0xED, which is not UTF-8"},    // U+DFFF
      {"\xEE\x80\x80", "U+E000, which is not ASCII"},
      {"\xEF\xBF\xBD", "U+FFFD, which is not ASCII"},
      {"\xF0\x8F\xBF\xBF", "the byte 0xF0, which is not UTF-8"},  // overlong U+FFFF
      {"\xF0\x90\x80\x80", "U+10000, which is not ASCII"},
      {"\xF4\x8F\xBF\xBF", "U+10FFFF, which is not ASCII"},
      {"\xF4\x90\x80\x80", "the byte 0xF4, which is not UTF-8"},  // past U+10FFFF
      {"\xF5\x80\x80\x80", "the byte 0xF5, which is not UTF-8"},
      {"\xC1\x80\x80\x80", "the byte 0xC1, which is not UTF-8"},  // no lead byte, then 3 more
      {"\xE2\x82", "the byte 0xE2, which is not UTF-8"},          // cut short
      {"\xE2\x28\xA1", "the byte 0xE2, which is not UTF-8"},      // not a continuation byte
  };
  for (const auto& [bytes, shown] : cases) {
    const auto p = define_value_problem("x" + bytes);
    ASSERT_TRUE(p.has_value()) << shown;
    EXPECT_NE(p->find("' has " + shown + ";"), std::string::npos) << *p;
    const auto n = define_name_problem("x" + bytes);
    ASSERT_TRUE(n.has_value()) << shown;
    EXPECT_NE(n->find("(it has " + shown + ")"), std::string::npos) << *n;
  }
}

// The message names the part of a -D flag that is wrong, and a bare -v is ptxas's word only
// right after -Xptxas, wherever it stands.
TEST(JobSpecShell, AFlagsMessageNamesItsWrongPart) {
  auto value = compile_flags_problem({"-DA=1,2"});
  ASSERT_TRUE(value.has_value());
  EXPECT_NE(value->message.find("'-DA=1,2': '1,2' has U+002C ','"), std::string::npos) << value->message;
  auto bare = compile_flags_problem({"-O3", "-D"});
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->index, 1u);
  EXPECT_NE(bare->message.find("'-D' is not allowed: a flag may choose how the sources compile"),
            std::string::npos) << bare->message;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-O3", "-v"}, {"-v"}, {"-Xptxas", "-v", "-v"}}) {
    auto v = compile_flags_problem(flags);
    ASSERT_TRUE(v.has_value()) << flags.size();
    EXPECT_EQ(v->index, flags.size() - 1);
  }
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-O3", "-Xptxas"}, {"-Xptxas", "-g"}, {"-g", "-Xptxas", "-lineinfo"}}) {
    auto x = compile_flags_problem(flags);
    ASSERT_TRUE(x.has_value()) << flags.back();
    EXPECT_NE(x->message.find("'-Xptxas' is not allowed"), std::string::npos) << x->message;
  }
  EXPECT_FALSE(compile_flags_problem({"-O3", "-Xptxas", "-v", "-g", "-Xptxas", "-O2"}).has_value());
}

}  // namespace
}  // namespace kfleet
