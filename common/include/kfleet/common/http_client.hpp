#pragma once
// A small blocking HTTP/1.1 client over libcurl, shared by the agent, the CLI, the end-to-end
// tests and the benchmarks. One HttpClient per thread (it keeps a connection alive).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"

namespace kfleet {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  // The body as JSON; an error (with the status and a body excerpt) if it is not JSON.
  Result<nlohmann::json> json() const;
  // For non-2xx: the API's {"error": {"message"}} text, or the status line.
  std::string error_message() const;
};

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds timeout{30000};   // whole request; 0 = none (streams)
  // https:// URLs: the server certificate is always verified, against ca_file when set (else
  // the system's CAs). insecure turns verification off: only for a throwaway test server.
  std::string ca_file;
  bool insecure = false;
  // A client certificate and key (PEM) for kfleetd's mTLS (--tls-client-ca).
  std::string client_cert_file, client_key_file;
};

class HttpClient {
 public:
  // base_url may list several servers, comma-separated (a kfleetd leader and its standbys):
  // a request that finds one refusing connections, or answering as a standby (503 with
  // X-Kfleet-Role: standby), goes to the next, and the client stays with the one that answered.
  explicit HttpClient(std::string base_url, std::string bearer_token = "", HttpOptions o = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void set_token(std::string token);
  const std::string& base_url() const;  // the server in use now

  // Transport failures (refused, timeout, DNS) are errors (Errc::unavailable); any HTTP status
  // is a response. `path` starts with "/".
  Result<HttpResponse> get(const std::string& path, std::chrono::milliseconds timeout = {});
  Result<HttpResponse> post_json(const std::string& path, const nlohmann::json& body,
                                 std::chrono::milliseconds timeout = {});
  Result<HttpResponse> request(const std::string& method, const std::string& path,
                               const std::string& body, const std::string& content_type,
                               std::chrono::milliseconds timeout = {});

  // Server-Sent Events: calls on_event(id, event_name, data) for each event until the server
  // closes the stream, on_event returns false, or the transport fails. Sends Last-Event-ID
  // when last_event_id is not empty.
  using SseHandler = std::function<bool(const std::string& id, const std::string& event,
                                        const std::string& data)>;
  Result<void> stream_sse(const std::string& path, const SseHandler& on_event,
                          const std::string& last_event_id = "");

 private:
  Result<HttpResponse> request_once(const std::string& method, const std::string& path,
                                    const std::string& body, const std::string& content_type,
                                    std::chrono::milliseconds timeout, int* curl_rc);
  Result<void> stream_once(const std::string& path, const SseHandler& on_event,
                           const std::string& last_event_id, bool* retry);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfleet
