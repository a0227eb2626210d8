// A JSON reader for one shape of body, the event upload; see event_batch.hpp. RFC 8259
// grammar, strings checked as UTF-8 the way nlohmann::json checks them; anything it is not
// sure of makes it give up (nullopt), never guess.
#include "kfleet/api/event_batch.hpp"

#include <charconv>
#include <string>

namespace kfleet::api {
namespace {

constexpr int kMaxDepth = 64;

class Scanner {
 public:
  explicit Scanner(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  // Into b, whose events' storage is reused (see event_batch.hpp); false: not the common shape.
  bool batch(EventBatch& b) {
    b.has_fencing_token = false;
    b.fencing_token = 0;
    bool seen_events = false;
    ws();
    if (!eat('{')) return false;
    ws();
    if (eat('}')) return false;  // no events: the general path says what is missing
    for (;;) {
      std::string_view key;
      if (!plain_string(key)) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (key == "fencing_token") {
        if (b.has_fencing_token || !integer(b.fencing_token)) return false;
        b.has_fencing_token = true;
      } else if (key == "events") {
        if (seen_events || !events(b.events)) return false;
        seen_events = true;
      } else if (!skip_value(0)) {
        return false;
      }
      ws();
      if (eat(',')) {
        ws();
        continue;
      }
      if (!eat('}')) return false;
      break;
    }
    ws();
    return p_ == end_ && seen_events;
  }

 private:
  // The events already in out are overwritten before new ones are added, so that a batch
  // the size of the last allocates nothing: each Event holds two heap blocks (its data's
  // object and its data text), and malloc's cost per block grows with kfleetd's heap (at
  // 50,000 queued jobs, 11 % of the ingestion's samples were in _int_malloc, against 5 % at
  // 10,000). out ends with exactly the events read.
  bool events(std::vector<Event>& out) {
    std::size_t n = 0;
    auto done = [&](bool ok) {
      out.resize(n);
      return ok;
    };
    if (!eat('[')) return done(false);
    ws();
    if (eat(']')) return done(true);
    for (;;) {
      if (n == out.size()) out.emplace_back();
      Event& e = out[n++];
      e.id = e.job_id = e.run_id = e.seq = 0;
      e.ts_ms = 0;
      e.type.clear();
      e.data_text.clear();
      if (!e.data.is_object() || !e.data.empty()) e.data = nlohmann::json::object();
      if (!event(e)) return done(false);
      ws();
      if (eat(',')) {
        ws();
        continue;
      }
      return done(eat(']'));
    }
  }

  bool event(Event& e) {
    if (!eat('{')) return false;
    ws();
    if (eat('}')) return true;
    unsigned seen = 0;  // a bit per field read, to give up on a repeated key
    std::string_view data;
    for (;;) {
      std::string_view key;
      if (!plain_string(key)) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      unsigned bit = 0;
      if (key == "seq") {
        bit = 1;
        if (!integer(e.seq)) return false;
      } else if (key == "ts_ms") {
        bit = 2;
        if (!integer(e.ts_ms)) return false;
      } else if (key == "type") {
        bit = 4;
        std::string_view t;
        if (!plain_string(t)) return false;
        e.type.assign(t);
      } else if (key == "data") {
        bit = 8;
        const char* start = p_;
        if (p_ == end_ || *p_ != '{' || !skip_value(1)) return false;
        data = std::string_view(start, static_cast<std::size_t>(p_ - start));
      } else {
        // Other fields (id, job_id, run_id) are the store's to set: checked, not kept.
        if (!skip_value(1)) return false;
      }
      if (seen & bit) return false;
      seen |= bit;
      ws();
      if (eat(',')) {
        ws();
        continue;
      }
      if (!eat('}')) return false;
      break;
    }
    if (!data.empty()) {
      if (e.type == event_type::stage_started || e.type == event_type::stage_finished) {
        auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) return false;
        e.data = std::move(j);
      } else {
        e.data_text.assign(data);
      }
    }
    return true;
  }

  // A JSON value of any kind, checked and passed over. depth counts enclosing arrays/objects.
  bool skip_value(int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': {
        if (++depth > kMaxDepth) return false;
        ++p_;
        ws();
        if (eat('}')) return true;
        for (;;) {
          if (!skip_string()) return false;
          ws();
          if (!eat(':')) return false;
          ws();
          if (!skip_value(depth)) return false;
          ws();
          if (eat(',')) {
            ws();
            continue;
          }
          return eat('}');
        }
      }
      case '[': {
        if (++depth > kMaxDepth) return false;
        ++p_;
        ws();
        if (eat(']')) return true;
        for (;;) {
          if (!skip_value(depth)) return false;
          ws();
          if (eat(',')) {
            ws();
            continue;
          }
          return eat(']');
        }
      }
      case '"': return skip_string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return skip_number();
    }
  }

  bool literal(std::string_view w) {
    if (static_cast<std::size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w)
      return false;
    p_ += w.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and finite as a double (nlohmann refuses
  // numbers that overflow one).
  bool skip_number() {
    const char* start = p_;
    bool plain = true;  // no fraction, no exponent
    eat('-');
    if (p_ == end_ || !digit(*p_)) return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && *p_ == '.') {
      plain = false;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      plain = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    const std::size_t n = static_cast<std::size_t>(p_ - start);
    if (plain && n <= 300) return true;  // an integer this long is finite even as a double
    double v = 0;
    auto [q, ec] = std::from_chars(start, p_, v);
    return ec == std::errc() && q == p_;  // out of range (either way): leave it to nlohmann
  }

  // An integer that fits an int64 (what is_number_integer() and get<int64_t>() would give).
  bool integer(std::int64_t& v) {
    const char* start = p_;
    if (!skip_number()) return false;
    auto [q, ec] = std::from_chars(start, p_, v);
    return ec == std::errc() && q == p_;
  }

  // A string without escapes: a key or the type.
  bool plain_string(std::string_view& out) {
    const char* start = p_ + 1;
    if (!skip_string(/*escapes=*/false)) return false;
    out = std::string_view(start, static_cast<std::size_t>(p_ - 1 - start));
    return true;
  }

  bool skip_string(bool escapes = true) {
    if (!eat('"')) return false;
    while (p_ != end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (!escapes || ++p_ == end_) return false;
        switch (*p_) {
          case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            ++p_;
            break;
          case 'u': {
            // Surrogates (pairs or not) are left to the general parser.
            if (end_ - p_ < 5) return false;
            unsigned cp = 0;
            for (int i = 1; i <= 4; ++i) {
              const char h = p_[i];
              cp <<= 4;
              if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
              else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
              else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
              else return false;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) return false;
            p_ += 5;
            break;
          }
          default: return false;
        }
        continue;
      }
      if (c < 0x80) {
        ++p_;
        continue;
      }
      if (!utf8()) return false;
    }
    return false;
  }

  // One UTF-8 sequence of two to four bytes, well-formed (Unicode table 3-7).
  bool utf8() {
    const auto b = [&](std::ptrdiff_t i) { return static_cast<unsigned char>(p_[i]); };
    const auto cont = [&](std::ptrdiff_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
      return i < end_ - p_ && b(i) >= lo && b(i) <= hi;
    };
    const unsigned c = b(0);
    if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(1)) return false;
      p_ += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      if (!cont(1, lo, hi) || !cont(2)) return false;
      p_ += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      if (!cont(1, lo, hi) || !cont(2) || !cont(3)) return false;
      p_ += 4;
    } else {
      return false;
    }
    return true;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  const char* p_;
  const char* end_;
};

}  // namespace

bool scan_event_batch(std::string_view body, EventBatch& into) {
  return Scanner(body).batch(into);
}

std::optional<EventBatch> scan_event_batch(std::string_view body) {
  EventBatch b;
  if (!scan_event_batch(body, b)) return std::nullopt;
  return b;
}

}  // namespace kfleet::api
