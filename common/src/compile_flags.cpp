#include "kfleet/common/compile_flags.hpp"

#include <cstdio>
#include <regex>

namespace kfleet {
namespace {

// Each allowed flag as a whole argument. Values are plain words or numbers: nothing that names a
// file or program. -I takes a relative path inside the job's sources. Every form is also made
// of shell-plain characters (below), which is checked first, with its own message.
const std::vector<std::regex>& allowed() {
  static const std::vector<std::regex> list = [] {
    std::vector<std::regex> r;
    for (const char* p : {
             R"(-O[0-3s]?)", R"(-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_@%+=:./-]*)?)",
             R"(-U[A-Za-z_][A-Za-z0-9_]*)",
             R"(-std=(c|gnu)\+\+(14|17|20|23))", R"(-g|-G|-lineinfo|--generate-line-info)",
             R"(-?-use_fast_math|-ffast-math|-fno-fast-math)",
             R"(-ftz=(true|false)|-prec-div=(true|false)|-prec-sqrt=(true|false)|-fmad=(true|false))",
             R"(-?-maxrregcount=[0-9]+)", R"(-?-extended-lambda|-?-expt-extended-lambda)",
             R"(-?-expt-relaxed-constexpr)", R"(-Xptxas=?(-v|-O[0-3]|--?dlcm=c[ag]|--?warn-spills|--?warn-lmem-usage|--?allow-expensive-optimizations=(true|false)))",
             R"(-v|-O[0-3])",  // the word after a bare -Xptxas
             R"(-W[A-Za-z0-9=_-]*|-w)", R"(-ffp-contract=(fast|on|off))",
             R"(-munsafe-fp-atomics|-mno-unsafe-fp-atomics|-mcumode|-mno-cumode)",
             R"(-mwavefrontsize64|-mno-wavefrontsize64|-funroll-loops|-fno-unroll-loops)",
             R"(-I(?!/)(?!.*\.\.)[A-Za-z0-9_./-]+)"})
      r.emplace_back(p, std::regex::ECMAScript);
    return r;
  }();
  return list;
}

// The characters a word may hold without quoting in a POSIX shell (the set Python's shlex.quote
// leaves alone): ASCII letters, digits and _ @ % + = : , . / -. Everything else a shell gives
// meaning to somewhere, inside double quotes or outside (XCU 2.2 Quoting, 2.6 Word Expansions,
// 2.13 Pattern Matching), or a common shell does (bash, ksh and zsh brace expansion, history
// expansion, zsh patterns), or it is not ASCII. '=' and '%' are special only at the start of a
// word (an assignment, zsh's =cmd, a job id), which a flag (it starts with '-'), a define's value
// (it follows NAME=) and an identifier never are. ',' means nothing to a shell but nvcc splits a
// -D value at commas into more defines (`-DA=1,B=2` defines B), so a define value may not have one.
bool shell_plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '@' || c == '%' || c == '+' || c == '=' || c == ':' || c == ',' || c == '.' ||
         c == '/' || c == '-';
}

bool identifier_char(unsigned char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

// The code point at s[i] and its length in bytes; len 1 and cp -1 for a byte that does not start
// a well-formed UTF-8 sequence.
std::pair<long, std::size_t> code_point_at(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  if (c < 0x80) return {static_cast<long>(c), 1};
  std::size_t len = 0;
  long cp = 0;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return {-1, 1};
  if (i + len > s.size()) return {-1, 1};
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {-1, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const long min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {-1, 1};
  return {cp, len};
}

// The character at s[i], shown so that a terminal prints it as it is: U+0024 '$', U+0020 (a
// space), U+001B, U+00E9, the byte 0xFF.
std::string shown_char(std::string_view s, std::size_t i) {
  const long cp = code_point_at(s, i).first;
  char buf[64];
  if (cp < 0) {
    std::snprintf(buf, sizeof buf, "the byte 0x%02X", static_cast<unsigned char>(s[i]));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "U+%04lX", cp);
  std::string out = buf;
  if (cp == ' ') return out + " (a space)";
  if (cp == '\t') return out + " (a tab)";
  if (cp == '\n') return out + " (a newline)";
  if (cp == '\'') return out + " (a single quote)";
  if (cp < 0x20 || cp >= 0x7F) return out;  // "which is a control character", "... not ASCII"
  return out + " '" + static_cast<char>(cp) + "'";
}

// What a shell (or nvcc) does with the character at s[i], as a clause after "which".
std::string why_refused(std::string_view s, std::size_t i, bool define_value) {
  const long cp = code_point_at(s, i).first;
  if (cp < 0) return "is not UTF-8";
  if (cp == '\n') return "ends a shell command";
  if (cp == '\t') return "splits shell words";
  if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return "is a control character";
  if (cp > 0x7F) return "is not ASCII";
  switch (static_cast<char>(cp)) {
    case '$': return "a shell expands, even inside double quotes";
    case '`': return "a shell runs as a command, even inside double quotes";
    case '\\': return "a shell takes as an escape, even inside double quotes";
    case '"': return "ends a shell's double quotes";
    case '!': return "bash and csh expand from their history, even inside double quotes";
    case '\'': return "starts a shell's single quotes";
    case ' ': return "splits shell words";
    case ';': case '&': case '|': case '<': case '>': case '(': case ')':
      return "is a shell operator";
    case '*': case '?': case '[': case ']': return "a shell matches against file names";
    case '{': case '}': return "bash, ksh and zsh expand (brace expansion)";
    case '#': return "starts a shell comment";
    case '~': return "a shell expands to a home directory";
    case '^': return "is a pipe to the Bourne shell and a pattern to zsh";
    case ',':
      if (define_value) return "nvcc takes as the start of another define";
      break;
    default: break;
  }
  return "is not allowed";
}

// The first character of `s` that is not shell-plain (',' neither, in a define value).
std::optional<std::size_t> first_refused(std::string_view s, bool define_value) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!shell_plain(c) || (define_value && c == ',')) return i;
  }
  return std::nullopt;
}

constexpr const char* kPlainFlag = "ASCII letters, digits and _ @ % + = : , . / -";
constexpr const char* kPlainValue = "ASCII letters, digits and _ @ % + = : . / -";
constexpr const char* kThroughAShell = " (nvcc runs its build steps through a shell)";

std::string in_quotes(std::string_view s) { return "'" + shown_safely(s) + "'"; }

// "'X$' is not a C identifier (it has U+0024 '$', which a shell expands, ...)"
std::optional<std::string> identifier_problem(std::string_view s) {
  if (s.empty()) return std::string("must not be empty");
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (identifier_char(static_cast<unsigned char>(s[i]), i == 0)) continue;
    std::string why = in_quotes(s) + " is not a C identifier (";
    if (i == 0 && s[0] >= '0' && s[0] <= '9') return why + "it starts with a digit)";
    why += "it has " + shown_char(s, i);
    const std::string what = why_refused(s, i, false);
    if (what != "is not allowed") why += ", which " + what;
    return why + ")";
  }
  return std::nullopt;
}

std::optional<std::string> plain_word_problem(std::string_view s, bool define_value) {
  const auto at = first_refused(s, define_value);
  if (!at) return std::nullopt;
  return in_quotes(s) + " has " + shown_char(s, *at) + ", which " + why_refused(s, *at, define_value) +
         "; a " + (define_value ? "define value" : "flag") + " may hold only " +
         (define_value ? kPlainValue : kPlainFlag) + kThroughAShell;
}

}  // namespace

std::string shown_safely(std::string_view s, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c >= 0x20 && c < 0x7F) out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

std::optional<std::string> define_name_problem(std::string_view name) {
  auto p = identifier_problem(name);
  if (!p) return std::nullopt;
  return *p + "; a define name is ASCII letters, digits and _, not starting with a digit";
}

std::optional<std::string> define_value_problem(std::string_view value) {
  return plain_word_problem(value, true);
}

std::optional<std::string> entry_problem(std::string_view entry) {
  auto p = identifier_problem(entry);
  if (!p) return std::nullopt;
  return *p + "; the entry is the name of the kernel's function, compiled in as "
              "-DKFLEET_ATTENTION_ENTRY=<entry> or -DKFLEET_SCALED_MM_ENTRY=<entry>: ASCII "
              "letters, digits and _, not starting with a digit";
}

const std::string& allowed_compile_flags_text() {
  static const std::string text =
      "-O0..-O3, -DNAME[=VALUE], -UNAME, -std=c++17/20, -g, -G, -lineinfo, --use_fast_math, "
      "-ffast-math, -ftz=, -prec-div=, -prec-sqrt=, -fmad=, -maxrregcount=N, "
      "--extended-lambda, --expt-relaxed-constexpr, -Xptxas -v|-O<n>|-dlcm=ca|cg|-warn-spills, "
      "-W..., -ffp-contract=, -munsafe-fp-atomics, -mcumode, -mwavefrontsize64, "
      "-funroll-loops, -I<relative dir in the sources>; NAME is a C identifier, VALUE ASCII "
      "letters, digits and _ @ % + = : . / -";
  return text;
}

std::optional<FlagProblem> compile_flags_problem(const std::vector<std::string>& flags) {
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    // Shell syntax first: its message names the character, the allow-list's only the flag.
    if (auto p = plain_word_problem(f, false)) return FlagProblem{i, *p};
    if (f.rfind("-D", 0) == 0 && f.size() > 2) {
      const std::size_t eq = f.find('=');
      const std::string_view name = std::string_view(f).substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (auto p = define_name_problem(name)) return FlagProblem{i, in_quotes(f) + ": " + *p};
      if (eq != std::string::npos) {
        if (auto p = define_value_problem(std::string_view(f).substr(eq + 1)))
          return FlagProblem{i, in_quotes(f) + ": " + *p};
      }
    }
    // "-v"/"-O3" alone are ptxas words only right after -Xptxas; elsewhere -O3 is nvcc's own.
    bool ok = false;
    for (const auto& re : allowed()) ok = ok || std::regex_match(f, re);
    if (f == "-v" && !(i > 0 && flags[i - 1] == "-Xptxas")) ok = false;
    if (f == "-Xptxas") ok = i + 1 < flags.size() && (flags[i + 1] == "-v" || std::regex_match(flags[i + 1], std::regex(R"(-O[0-3]|--?dlcm=c[ag]|--?warn-spills|--?warn-lmem-usage)")));
    if (!ok) {
      return FlagProblem{i, in_quotes(f) + " is not allowed: a flag may choose how the sources "
                            "compile, not which programs or files the compiler uses (kfleet "
                            "picks the compiler and host compiler). Allowed: " +
                                allowed_compile_flags_text()};
    }
  }
  return std::nullopt;
}

Result<void> check_compile_flags(const std::vector<std::string>& flags) {
  if (auto p = compile_flags_problem(flags))
    return make_error(Errc::invalid_argument,
                      "kernel.flags[" + std::to_string(p->index) + "]: " + p->message);
  return {};
}

Result<void> check_kernel_compile_inputs(const KernelSpec& k) {
  if (!k.entry.empty()) {
    if (auto p = entry_problem(k.entry))
      return make_error(Errc::invalid_argument, "kernel.entry: " + *p);
  }
  for (const auto& [name, value] : k.defines) {
    const std::string field = "kernel.defines." + shown_safely(name);
    if (auto p = define_name_problem(name)) return make_error(Errc::invalid_argument, field + ": " + *p);
    if (auto p = define_value_problem(value)) return make_error(Errc::invalid_argument, field + ": " + *p);
  }
  return check_compile_flags(k.flags);
}

}  // namespace kfleet
