#include "kfleet/common/compile_flags.hpp"

#include <regex>

namespace kfleet {
namespace {

// Each allowed flag as a whole argument. Values are plain words or numbers: nothing that names a
// file or program. -I takes a relative path inside the job's sources.
const std::vector<std::regex>& allowed() {
  static const std::vector<std::regex> list = [] {
    std::vector<std::regex> r;
    for (const char* p : {
             R"(-O[0-3s]?)", R"(-[DU][A-Za-z_][A-Za-z0-9_]*(=[^\s]*)?)",
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

}  // namespace

const std::string& allowed_compile_flags_text() {
  static const std::string text =
      "-O0..-O3, -DNAME[=VALUE], -UNAME, -std=c++17/20, -g, -G, -lineinfo, --use_fast_math, "
      "-ffast-math, -ftz=, -prec-div=, -prec-sqrt=, -fmad=, -maxrregcount=N, "
      "--extended-lambda, --expt-relaxed-constexpr, -Xptxas -v|-O<n>|-dlcm=ca|cg|-warn-spills, "
      "-W..., -ffp-contract=, -munsafe-fp-atomics, -mcumode, -mwavefrontsize64, "
      "-funroll-loops, -I<relative dir in the sources>";
  return text;
}

Result<void> check_compile_flags(const std::vector<std::string>& flags) {
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    // "-v"/"-O3" alone are ptxas words only right after -Xptxas; elsewhere -O3 is nvcc's own.
    bool ok = false;
    for (const auto& re : allowed()) ok = ok || std::regex_match(f, re);
    if (f == "-v" && !(i > 0 && flags[i - 1] == "-Xptxas")) ok = false;
    if (f == "-Xptxas") ok = i + 1 < flags.size() && (flags[i + 1] == "-v" || std::regex_match(flags[i + 1], std::regex(R"(-O[0-3]|--?dlcm=c[ag]|--?warn-spills|--?warn-lmem-usage)")));
    if (!ok) {
      return make_error(Errc::invalid_argument,
                        "kernel.flags: '" + f + "' is not allowed: a flag may choose how the " +
                            "sources compile, not which programs or files the compiler uses " +
                            "(kfleet picks the compiler and host compiler). Allowed: " +
                            allowed_compile_flags_text());
    }
  }
  return {};
}

}  // namespace kfleet
