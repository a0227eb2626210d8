#pragma once
// What every command gets: resolved config, output streams and a client for kfleetd that
// turns transport failures and API errors into the user-facing messages of api_errors.hpp.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/cli/app.hpp"
#include "kfleet/cli/config.hpp"
#include "kfleet/common/http_client.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::cli {

struct ApiReply {
  long status = 0;
  nlohmann::json body;
};

class Session {
 public:
  Session(CliIo& io, CliConfig config, bool json, bool color);

  CliIo& io() { return io_; }
  const CliConfig& config() const { return config_; }
  bool json() const { return json_; }
  bool color() const { return color_; }
  TimeMs now() const { return io_.clock->now_ms(); }

  // 2xx answers with a JSON body; anything else is a described Error.
  Result<ApiReply> get(const std::string& path);
  Result<ApiReply> post(const std::string& path, const nlohmann::json& body);
  // Any HTTP answer as it came (status and JSON body); only a transport failure is an Error.
  // For callers that act on the API's error code (kfleet mcp's refusals).
  Result<ApiReply> post_any(const std::string& path, const nlohmann::json& body);
  // SSE with the same error wording; `last_event_id` resumes a dropped stream.
  Result<void> stream(const std::string& path, const HttpClient::SseHandler& on_event,
                      const std::string& last_event_id);

  // The kfleetd answering now (one of a comma-separated --server list: the leader).
  const std::string& server_in_use() { return http().base_url(); }

  // Prints "kfleet: [<context>: ]<message>" on stderr and returns the exit status for it.
  int fail(const Error& e, const std::string& context = "");
  // Blocks for the current backoff step and doubles it up to the cap.
  void backoff(int& delay_ms) const;

 private:
  Result<ApiReply> finish(Result<HttpResponse> r);
  HttpClient& http();

  CliIo& io_;
  CliConfig config_;
  bool json_;
  bool color_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace kfleet::cli
