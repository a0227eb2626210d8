// scan_event_batch reads an event upload without a JSON tree. It must give the events the
// general parser (nlohmann::json) gives, or give up; it must never accept what that refuses.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kfleet/api/event_batch.hpp"

namespace {

using kfleet::Event;
using kfleet::api::scan_event_batch;

nlohmann::json data_of(const Event& e) {
  return e.data_text.empty() ? e.data : nlohmann::json::parse(e.data_text);
}

// The scanner's events equal what the general parser reads from the same body.
void expect_same_as_general(const std::string& body) {
  SCOPED_TRACE(body);
  auto fast = scan_event_batch(body);
  ASSERT_TRUE(fast.has_value());
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(fast->fencing_token, j.value("fencing_token", std::int64_t{0}));
  ASSERT_EQ(fast->events.size(), j["events"].size());
  for (std::size_t i = 0; i < fast->events.size(); ++i) {
    const auto& e = fast->events[i];
    const Event g = kfleet::event_from_json(j["events"][i]);
    EXPECT_EQ(e.seq, g.seq);
    EXPECT_EQ(e.ts_ms, g.ts_ms);
    EXPECT_EQ(e.type, g.type);
    EXPECT_EQ(data_of(e), g.data);
  }
}

TEST(EventBatch, ReadsTheCommonShapeAsTheGeneralParserDoes) {
  expect_same_as_general(
      R"({"fencing_token": 7, "events": [{"seq": 1, "ts_ms": 5, "type": "bench.samples",)"
      R"( "data": {"i": 0, "samples_us": [10.1, 1e3, -0.5E-2, 0, -7], "s": "a\"b\\c\u00e9\n",)"
      R"( "u": "\u00e9t\u00e9 été ✓ 𝄞", "n": null, "t": true, "f": false, "o": {"x": [[], {}]}}},)"
      "\n {\"type\" : \"log\" , \"seq\":2,\"data\":{}} ,{\"seq\":3,\"type\":\"x\"}]}");
  expect_same_as_general(R"({"events": []})");
  expect_same_as_general(R"(  {"events":[{"seq":9223372036854775807,"type":"t","id":3,"job_id":[1],"run_id":{"a":1}}],"other":[1,{"k":"v"}]} )");
}

// kfleetd scans every upload into one batch per thread: what an event held before (parsed
// stage data, data text, fields the control plane set) must not show through the next.
TEST(EventBatch, AReusedBatchHoldsExactlyTheNewEvents) {
  kfleet::api::EventBatch b;
  ASSERT_TRUE(scan_event_batch(
      R"({"fencing_token":4,"events":[{"seq":1,"ts_ms":9,"type":"stage.started","data":{"stage":"build"}},)"
      R"({"seq":2,"type":"log","data":{"text":"a longer line than the small-string buffer"}},)"
      R"({"seq":3,"type":"x","data":{"k":1}}]})",
      b));
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_EQ(b.fencing_token, 4);
  for (auto& e : b.events) {  // as ControlPlane::ingest does
    e.id = 11;
    e.job_id = 12;
    e.run_id = 13;
    if (e.type == "stage.started") e.data["agent"] = "a1";
  }
  // Fewer events, other types, no data, no fencing token: nothing of the first batch remains.
  ASSERT_TRUE(scan_event_batch(R"({"events":[{"seq":5,"type":"log"},{"seq":6,"type":"stage.started"}]})", b));
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_FALSE(b.has_fencing_token);
  EXPECT_EQ(b.fencing_token, 0);
  for (const auto& e : b.events) {
    EXPECT_EQ(e.id, 0);
    EXPECT_EQ(e.job_id, 0);
    EXPECT_EQ(e.run_id, 0);
    EXPECT_EQ(e.ts_ms, 0);
    EXPECT_TRUE(e.data_text.empty()) << e.data_text;
    EXPECT_EQ(e.data, nlohmann::json::object()) << e.data;
  }
  EXPECT_EQ(b.events[0].seq, 5);
  EXPECT_EQ(b.events[1].type, "stage.started");
  // A batch with an escape in a type is the general parser's (the route then parses it so).
  EXPECT_FALSE(scan_event_batch(R"({"events":[{"seq":7,"type":"log"},{"seq":8,"type":"l\u0067"}]})", b));
  // More events than before: the new ones are fresh too.
  ASSERT_TRUE(scan_event_batch(
      R"({"events":[{"seq":1,"type":"a","data":{"v":1}},{"seq":2,"type":"b"},{"seq":3,"type":"c","data":{"w":2}}]})",
      b));
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_EQ(data_of(b.events[0]), nlohmann::json({{"v", 1}}));
  EXPECT_EQ(data_of(b.events[1]), nlohmann::json::object());
  EXPECT_EQ(data_of(b.events[2]), nlohmann::json({{"w", 2}}));
}

TEST(EventBatch, StageEventsKeepParsedDataTheControlPlaneCanExtend) {
  auto b = scan_event_batch(
      R"({"events":[{"seq":1,"type":"stage.started","data":{"stage":"build"}},)"
      R"({"seq":2,"type":"stage.finished","data":{"stage":"build","ok":true}},)"
      R"({"seq":3,"type":"log","data":{"text":"hi"}}]})");
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->events.size(), 3u);
  EXPECT_TRUE(b->events[0].data_text.empty());
  EXPECT_EQ(b->events[0].data["stage"], "build");
  EXPECT_TRUE(b->events[1].data_text.empty());
  EXPECT_EQ(b->events[1].data["ok"], true);
  EXPECT_EQ(b->events[2].data_text, R"({"text":"hi"})");
  EXPECT_EQ(kfleet::to_json(b->events[2])["data"]["text"], "hi");
}

TEST(EventBatch, GivesUpOnWhatItDoesNotReadItself) {
  for (const char* body : {
           "",                                                           // empty
           "[]",                                                         // not an object
           "{}",                                                         // no events
           R"({"events": {}})",                                          // events not a list
           R"({"events": [1]})",                                         // an event not an object
           R"({"events": [{"seq": 1, "seq": 2, "type": "t"}]})",         // repeated key
           R"({"events": [], "events": []})",                            // repeated key
           R"({"events": [{"seq": 1.0, "type": "t"}]})",                 // not an integer
           R"({"events": [{"seq": "1", "type": "t"}]})",                 // not a number
           R"({"events": [{"seq": 99999999999999999999, "type": "t"}]})",  // past int64
           R"({"events": [{"seq": 1, "type": "t\n"}]})",                 // escape in the type
           R"({"ev\u0065nts": []})",                                     // escape in a key
           R"({"events": [{"seq": 1, "type": "t", "data": null}]})",     // data not an object
           R"({"events": [{"seq": 1, "type": "t", "data": {"s": "\ud834\udd1e"}}]})",  // surrogates
           R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1e400}}]})",  // overflows a double
       })
    EXPECT_FALSE(scan_event_batch(body).has_value()) << body;
}

TEST(EventBatch, NeverAcceptsWhatTheGeneralParserRefuses) {
  const std::vector<std::string> bad = {
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 01}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1.}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": .5}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": +1}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1e}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": [1,]}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1,}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {x: 1}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": tru}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": "\x"}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": "\u12"}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 'a'}}]})",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1}}]} x)",
      R"({"events": [{"seq": 1, "type": "t", "data": {"x": 1}})",
      "{\"events\": [{\"seq\": 1, \"type\": \"t\", \"data\": {\"x\": \"a\tb\"}}]}",  // raw tab
      "{\"events\": [{\"seq\": 1, \"type\": \"t\", \"data\": {\"x\": \"\xC3\"}}]}",  // cut UTF-8
      "{\"events\": [{\"seq\": 1, \"type\": \"t\", \"data\": {\"x\": \"\xC0\xAF\"}}]}",  // overlong
      "{\"events\": [{\"seq\": 1, \"type\": \"t\", \"data\": {\"x\": \"\xED\xA0\x80\"}}]}",  // surrogate
      "{\"events\": [{\"seq\": 1, \"type\": \"t\", \"data\": {\"x\": \"\xF4\x90\x80\x80\"}}]}",  // > U+10FFFF
      "{\"events\": [{\"seq\": 1, \"type\": \"\xFF\", \"data\": {}}]}",
  };
  for (const auto& body : bad) {
    EXPECT_FALSE(nlohmann::json::accept(body)) << body;  // the cases are really invalid
    EXPECT_FALSE(scan_event_batch(body).has_value()) << body;
  }
  // Deep nesting is left to the general parser rather than recursed into.
  std::string deep = R"({"events": [{"seq": 1, "type": "t", "data": {"x": )";
  deep += std::string(200, '[') + std::string(200, ']') + "}}]}";
  EXPECT_FALSE(scan_event_batch(deep).has_value());
}

// Random damage to a valid body: whatever the scanner accepts, the general parser accepts and
// reads the same way.
TEST(EventBatch, DamagedBodiesAreRefusedOrReadAlike) {
  const std::string good =
      R"({"fencing_token": 3, "events": [{"seq": 1, "ts_ms": 2, "type": "log",)"
      R"( "data": {"text": "é ok", "n": [1.5, -2, 3e2], "b": true}}, {"seq": 2, "type": "x"}]})";
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,.-+eE0123456789 \\\"tnfu\xC3\xA9\xFF";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0: b.erase(at, 1); break;
        case 1: b.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: b[at] = alphabet[rng() % alphabet.size()];
      }
    }
    auto fast = scan_event_batch(b);
    if (!fast) continue;
    ++accepted;
    ASSERT_TRUE(nlohmann::json::accept(b)) << b;
    expect_same_as_general(b);
  }
  EXPECT_GT(accepted, 100);  // the damage left enough bodies valid to compare
}

}  // namespace
