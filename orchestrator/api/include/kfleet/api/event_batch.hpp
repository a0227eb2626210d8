#pragma once
// The body of an event upload ({"fencing_token": N, "events": [...]}) read without building a
// JSON tree. Batches are large (hundreds of events) and each event's data is only stored, so
// scan_event_batch checks that the body is JSON and keeps each event's data as the text that
// came in (Event::data_text) instead of parsing it into a tree and writing it out again.
// Stage events (stage.started, stage.finished) are the exception: kfleetd reads and extends
// their data, so theirs is parsed into Event::data.
//
// It reads the common shape only. For anything else (escapes in keys or in the type, a
// repeated key, data that is not an object, a number that is not a plain integer where one is
// wanted, nesting deeper than 64, ...) it answers nullopt and the caller parses the body the
// general way, which gives the same events or the error the client should see. It never
// accepts text that nlohmann::json would refuse.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kfleet/common/event.hpp"

namespace kfleet::api {

struct EventBatch {
  bool has_fencing_token = false;
  std::int64_t fencing_token = 0;
  std::vector<Event> events;  // seq, ts_ms, type and data (or data_text) as sent
};

std::optional<EventBatch> scan_event_batch(std::string_view body);

// The same into `into`, reusing the storage of the events it holds (kfleetd keeps one batch
// per thread, so that steady uploads allocate nothing per event). false: not the common shape,
// and `into` holds nothing useful.
bool scan_event_batch(std::string_view body, EventBatch& into);

}  // namespace kfleet::api
