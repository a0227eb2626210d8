#pragma once
// One JSON object per line on stdout (PROTOCOL.md). Hand-written so the harness, compiled by
// nvcc/hipcc on a bare GPU host, needs no JSON library; non-finite numbers become null.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kfleet::harness {

class JsonLine {
 public:
  explicit JsonLine(const char* type) { str("type", type); }
  JsonLine& str(const char* key, const std::string& v) { return raw(key, quote(v)); }
  JsonLine& num(const char* key, double v) { return raw(key, number(v)); }
  JsonLine& integer(const char* key, long long v) { return raw(key, std::to_string(v)); }
  JsonLine& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonLine& nums(const char* key, const std::vector<double>& vs) {
    std::string s = "[";
    for (std::size_t i = 0; i < vs.size(); ++i) s += (i ? "," : "") + number(vs[i]);
    return raw(key, s + "]");
  }
  JsonLine& raw(const char* key, const std::string& json) {
    body_ += (body_.empty() ? "" : ",") + quote(key) + ":" + json;
    return *this;
  }
  std::string text() const { return "{" + body_ + "}"; }
  void print() const {
    std::FILE* to = result_stream();
    std::fputs((text() + "\n").c_str(), to);
    std::fflush(to);  // the agent reads lines as they come; a crash must not lose them
  }
  // Where protocol lines go: stdout, or the pipe the agent gave (--result-fd, PROTOCOL.md).
  static std::FILE*& result_stream() {
    static std::FILE* stream = stdout;
    return stream;
  }

  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
      else if (c == '\n') out += "\\n";
      else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); out += b; }
      else out += static_cast<char>(c);
    }
    return out + "\"";
  }

 private:
  std::string body_;
};

}  // namespace kfleet::harness
