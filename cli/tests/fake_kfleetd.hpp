#pragma once
// A tiny synchronous HTTP server standing in for kfleetd: it records every request and answers
// from a handler the test supplies. One connection at a time is enough for the CLI.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kfleet::cli::testing {

struct RecordedRequest {
  std::string method, target, authorization, accept, last_event_id, body;
};

struct CannedReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class FakeKfleetd {
 public:
  using Handler = std::function<CannedReply(const RecordedRequest&)>;
  explicit FakeKfleetd(Handler handler);  // listens on 127.0.0.1, port 0
  ~FakeKfleetd();
  std::string url() const;
  std::vector<RecordedRequest> requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SSE body for a list of JSON events, each with its "id" as the SSE id, closed like kfleetd's
// with an "end" event unless the stream is to look dropped.
std::string sse_body(const std::vector<std::string>& event_json, bool dropped = false);

}  // namespace kfleet::cli::testing
