#include "session.hpp"

#include <algorithm>
#include <ostream>
#include <thread>

#include "kfleet/cli/api_errors.hpp"
#include "kfleet/cli/exit_code.hpp"

namespace kfleet::cli {

Session::Session(CliIo& io, CliConfig config, bool json, bool color)
    : io_(io), config_(std::move(config)), json_(json), color_(color) {}

HttpClient& Session::http() {
  if (!http_) {
    HttpOptions o;
    o.ca_file = config_.ca_file;
    o.insecure = config_.insecure;
    http_ = std::make_unique<HttpClient>(config_.server, config_.token, o);
  }
  return *http_;
}

Result<ApiReply> Session::finish(Result<HttpResponse> r) {
  if (!r) return describe_transport_failure(config_.server, r.error().message);
  if (r->status < 200 || r->status >= 300) return describe_http_failure(r->status, r->body);
  ApiReply reply;
  reply.status = r->status;
  if (!r->body.empty()) {
    reply.body = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (reply.body.is_discarded())
      return make_error(Errc::internal, "kfleetd answered with something that is not JSON (HTTP " +
                                            std::to_string(r->status) + "): is " +
                                            config_.server + " really kfleetd?");
  }
  return reply;
}

Result<ApiReply> Session::get(const std::string& path) { return finish(http().get(path)); }

Result<ApiReply> Session::post(const std::string& path, const nlohmann::json& body) {
  return finish(http().post_json(path, body));
}

Result<ApiReply> Session::post_any(const std::string& path, const nlohmann::json& body) {
  auto r = http().post_json(path, body);
  if (!r) return describe_transport_failure(config_.server, r.error().message);
  ApiReply reply;
  reply.status = r->status;
  reply.body = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

Result<void> Session::stream(const std::string& path, const HttpClient::SseHandler& on_event,
                             const std::string& last_event_id) {
  auto r = http().stream_sse(path, on_event, last_event_id);
  if (!r) {
    const Error& e = r.error();
    if (e.code == Errc::unauthorized || e.code == Errc::forbidden)
      return describe_http_failure(e.code == Errc::unauthorized ? 401 : 403, "");
    // Only a transport failure says "failed:"; a 5xx is kfleetd answering, not unreachable.
    if (e.code == Errc::unavailable && e.message.find(" failed: ") != std::string::npos)
      return describe_transport_failure(config_.server, e.message);
    return e;
  }
  return r;
}

int Session::fail(const Error& e, const std::string& context) {
  io_.err << "kfleet: " << (context.empty() ? "" : context + ": ") << e.message << "\n";
  return exit_code_for_error(e);
}

void Session::backoff(int& delay_ms) const {
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  delay_ms = std::min(delay_ms * 2, io_.backoff_max_ms);
}

}  // namespace kfleet::cli
