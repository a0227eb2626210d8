// kfleetd's event-upload scanner (POST /api/v1/runs/{id}/events): the body is read without
// building a JSON tree. Its promise, checked here against nlohmann::json on every input: it
// never accepts text nlohmann::json refuses, and what it accepts it reads as nlohmann::json
// does (the fencing token, each event's seq, ts_ms, type and data). Reusing one batch (as
// kfleetd does per thread) gives the same events as a fresh one.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "kfleet/api/event_batch.hpp"

namespace {

nlohmann::json data_of(const kfleet::Event& e) {
  if (!e.data_text.empty()) return nlohmann::json::parse(e.data_text, nullptr, false);
  return e.data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static api::EventBatch reused;  // keeps the previous input's events, as kfleetd's does
  const bool reused_ok = api::scan_event_batch(body, reused);
  auto batch = api::scan_event_batch(body);
  fuzz::check(reused_ok == batch.has_value(), "reused and fresh batches disagree on acceptance");
  if (!batch) return 0;

  auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  fuzz::check(!doc.is_discarded(), "the scanner accepted a body that is not JSON");
  fuzz::check(doc.is_object(), "the scanner accepted a body that is not an object");
  // The general path (routes_agents.cpp): value("fencing_token", 0) and event_from_json.
  std::int64_t want_token = 0;
  try {
    want_token = doc.value("fencing_token", std::int64_t{0});
  } catch (const nlohmann::json::exception&) {
    fuzz::broken("the scanner accepted a fencing_token the general path refuses");
  }
  fuzz::check((batch->has_fencing_token ? batch->fencing_token : 0) == want_token, "fencing_token differs");
  fuzz::check(doc.contains("events") && doc["events"].is_array(), "events is not an array");
  const auto& evs = doc["events"];
  fuzz::check(evs.size() == batch->events.size(), "event count differs");
  fuzz::check(reused.events.size() == batch->events.size(), "reused batch has another count");
  for (std::size_t i = 0; i < evs.size(); ++i) {
    const Event want = event_from_json(evs[i]);
    const Event& got = batch->events[i];
    const Event& got2 = reused.events[i];
    const std::string at = " at event " + std::to_string(i);
    fuzz::check(want.seq == got.seq, "seq differs" + at);
    fuzz::check(want.ts_ms == got.ts_ms, "ts_ms differs" + at);
    fuzz::check(want.type == got.type, "type differs" + at);
    fuzz::check(data_of(got) == want.data, "data differs" + at);
    fuzz::check(got2.seq == got.seq && got2.ts_ms == got.ts_ms && got2.type == got.type &&
                    data_of(got2) == data_of(got),
                "reused batch differs" + at);
  }
  return 0;
}
