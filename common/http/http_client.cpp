#include "kfleet/common/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <thread>
#include <vector>

#include <curl/curl.h>

namespace kfleet {

namespace {

// curl_global_init is not thread-safe; run it once before the first handle is made.
void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string excerpt(const std::string& body, std::size_t n = 200) {
  return body.size() <= n ? body : body.substr(0, n) + "...";
}

size_t on_body(char* p, size_t size, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, size * n);
  return size * n;
}

size_t on_header(char* p, size_t size, size_t n, void* ud) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(ud);
  std::string line(p, size * n);
  // A new status line starts a new response (redirects, 100-continue): forget the old headers.
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    (*headers)[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

// Incremental text/event-stream parser (WHATWG rules that matter here): fields per line,
// a blank line dispatches, data lines join with "\n", lines starting with ':' are comments.
struct SseParser {
  const HttpClient::SseHandler* handler = nullptr;
  std::string pending;  // bytes of an unfinished line
  std::string id, event, data;
  bool has_data = false;
  bool stopped = false;
  CURL* curl = nullptr;
  long status = 0;         // known at the first body bytes
  std::string error_body;  // a non-2xx answer is not a stream

  // Returns false once the handler asked to stop.
  bool feed(const char* p, std::size_t n) {
    pending.append(p, n);
    std::size_t start = 0;
    while (true) {
      auto nl = pending.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = pending.substr(start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!on_line(line)) {
        stopped = true;
        return false;
      }
    }
    pending.erase(0, start);
    return true;
  }

  bool on_line(const std::string& line) {
    if (line.empty()) {
      if (!has_data && event.empty()) return true;
      bool go_on = (*handler)(id, event.empty() ? "message" : event, data);
      event.clear();
      data.clear();
      has_data = false;
      return go_on;  // id persists across events, as in the spec
    }
    if (line[0] == ':') return true;
    auto colon = line.find(':');
    std::string field = line.substr(0, colon);
    std::string value;
    if (colon != std::string::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    }
    if (field == "data") {
      if (has_data) data += '\n';
      data += value;
      has_data = true;
    } else if (field == "event") {
      event = value;
    } else if (field == "id") {
      id = value;
    }
    return true;
  }
};

size_t on_sse(char* p, size_t size, size_t n, void* ud) {
  auto* parser = static_cast<SseParser*>(ud);
  if (parser->status == 0) curl_easy_getinfo(parser->curl, CURLINFO_RESPONSE_CODE, &parser->status);
  if (parser->status < 200 || parser->status >= 300) {
    if (parser->error_body.size() < 4096) parser->error_body.append(p, size * n);
    return size * n;
  }
  if (!parser->feed(p, size * n)) return 0;  // makes curl abort the transfer
  return size * n;
}

}  // namespace

Result<nlohmann::json> HttpResponse::json() const {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return make_error(Errc::internal, "HTTP " + std::to_string(status) +
                                          ": response is not JSON: " + excerpt(body));
  }
  return j;
}

std::string HttpResponse::error_message() const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
    if (e.is_string()) return e.get<std::string>();
  }
  std::string text = "HTTP " + std::to_string(status);
  if (!body.empty()) text += ": " + excerpt(trim(body));
  return text;
}

struct HttpClient::Impl {
  std::vector<std::string> bases;  // the comma-separated list the client was given
  std::size_t current = 0;
  std::string base;                // bases[current]
  std::string token;
  HttpOptions opts;
  CURL* curl = nullptr;

  // Resets per-request state on the kept handle; the connection cache survives the reset.
  curl_slist* prepare(const std::string& method, const std::string& path,
                      std::chrono::milliseconds timeout, const std::string& content_type,
                      const std::string& extra_header) {
    curl_easy_reset(curl);
    std::string url = base + path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(opts.connect_timeout.count()));
    auto t = timeout.count() > 0 ? timeout : opts.timeout;
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(t.count()));
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
    if (!opts.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, opts.ca_file.c_str());
    if (opts.insecure) {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (!opts.client_cert_file.empty())
      curl_easy_setopt(curl, CURLOPT_SSLCERT, opts.client_cert_file.c_str());
    if (!opts.client_key_file.empty())
      curl_easy_setopt(curl, CURLOPT_SSLKEY, opts.client_key_file.c_str());
    if (method == "GET") {
      curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    } else if (method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
    } else {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    curl_slist* h = nullptr;
    if (!token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + token).c_str());
    if (!content_type.empty()) h = curl_slist_append(h, ("Content-Type: " + content_type).c_str());
    // An empty Expect stops curl from waiting for 100-continue on larger bodies.
    h = curl_slist_append(h, "Expect:");
    if (!extra_header.empty()) h = curl_slist_append(h, extra_header.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    return h;
  }

  Error transport_error(CURLcode rc, const std::string& method, const std::string& path,
                        const char* errbuf) {
    std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    std::string hint = " (is kfleetd running and reachable at " + base + "?)";
    if (rc == CURLE_PEER_FAILED_VERIFICATION || detail.find("certificate") != std::string::npos)
      hint = " (kfleetd's certificate is not trusted: pass --ca-file with the CA that signed it)";
    else if (rc == CURLE_SSL_CONNECT_ERROR || detail.find("SSL") != std::string::npos ||
             detail.find("TLS") != std::string::npos)
      hint = " (TLS failed: is it an https:// server, and does it want a client certificate?)";
    return make_error(Errc::unavailable, method + " " + base + path + " failed: " + detail + hint);
  }
};

HttpClient::HttpClient(std::string base_url, std::string bearer_token, HttpOptions o)
    : impl_(std::make_unique<Impl>()) {
  global_init_once();
  // "http://a:8470,http://b:8470": several kfleetd (a leader and its standbys); requests go
  // to the one that answers.
  std::size_t start = 0;
  while (true) {
    auto comma = base_url.find(',', start);
    std::string one = trim(base_url.substr(start, comma == std::string::npos ? std::string::npos
                                                                             : comma - start));
    while (!one.empty() && one.back() == '/') one.pop_back();
    if (!one.empty()) impl_->bases.push_back(std::move(one));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (impl_->bases.empty()) impl_->bases.push_back("");
  impl_->base = impl_->bases[0];
  impl_->token = std::move(bearer_token);
  impl_->opts = o;
  impl_->curl = curl_easy_init();
  if (impl_->curl == nullptr) std::abort();  // only fails when out of memory
}

HttpClient::~HttpClient() {
  if (impl_ && impl_->curl) curl_easy_cleanup(impl_->curl);
}

void HttpClient::set_token(std::string token) { impl_->token = std::move(token); }
const std::string& HttpClient::base_url() const { return impl_->base; }

Result<HttpResponse> HttpClient::get(const std::string& path, std::chrono::milliseconds timeout) {
  return request("GET", path, "", "", timeout);
}

Result<HttpResponse> HttpClient::post_json(const std::string& path, const nlohmann::json& body,
                                           std::chrono::milliseconds timeout) {
  return request("POST", path, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                 "application/json", timeout);
}

namespace {

// Failures after which a request certainly never reached a server: safe to send elsewhere.
bool never_sent(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         rc == CURLE_COULDNT_RESOLVE_PROXY;
}

// The connection broke before an answer came: the server may or may not have acted.
bool lost_reply(CURLcode rc) {
  return rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR;
}

// How long a client with several URLs keeps going round them while none answers (a standby
// takes over from a dead leader well within it).
constexpr std::chrono::milliseconds kFailoverWait{10000};

// A standby kfleetd's answer: it did nothing with the request; the leader is elsewhere.
bool from_standby(const HttpResponse& r) {
  if (r.status != 503) return false;
  auto it = r.headers.find("x-kfleet-role");
  return it != r.headers.end() && it->second == "standby";
}

}  // namespace

Result<HttpResponse> HttpClient::request(const std::string& method, const std::string& path,
                                         const std::string& body,
                                         const std::string& content_type,
                                         std::chrono::milliseconds timeout) {
  // With several URLs: a refused connection or a standby's 503 moves on to the next one (the
  // request was not acted on), and so does a GET that lost its connection (reading twice is
  // harmless). While none of them answers (a failover under way), rounds over the list go on
  // for up to kFailoverWait. Other failures return as they are (the server may have acted),
  // but the next request starts at the next URL.
  const std::size_t n = impl_->bases.size();
  const auto deadline = std::chrono::steady_clock::now() + kFailoverWait;
  for (std::size_t attempt = 1;; ++attempt) {
    int rc = CURLE_OK;
    auto r = request_once(method, path, body, content_type, timeout, &rc);
    if (n <= 1) return r;
    const auto code = static_cast<CURLcode>(rc);
    if (r.ok() && !from_standby(*r)) return r;
    impl_->current = (impl_->current + 1) % n;
    impl_->base = impl_->bases[impl_->current];
    const bool again = r.ok() || never_sent(code) || (method == "GET" && lost_reply(code));
    if (!again) return r;
    if (attempt % n == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

Result<HttpResponse> HttpClient::request_once(const std::string& method, const std::string& path,
                                              const std::string& body,
                                              const std::string& content_type,
                                              std::chrono::milliseconds timeout, int* curl_rc) {
  CURL* c = impl_->curl;
  curl_slist* h = impl_->prepare(method, path, timeout, content_type, "");
  HttpResponse resp;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp.headers);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(h);
  *curl_rc = static_cast<int>(rc);
  if (rc != CURLE_OK) return impl_->transport_error(rc, method, path, errbuf);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

Result<void> HttpClient::stream_sse(const std::string& path, const SseHandler& on_event,
                                    const std::string& last_event_id) {
  // As request(): a refused connection or a standby's answer moves on to the next URL.
  const std::size_t n = impl_->bases.size();
  const auto deadline = std::chrono::steady_clock::now() + kFailoverWait;
  for (std::size_t attempt = 1;; ++attempt) {
    bool retry = false;
    auto r = stream_once(path, on_event, last_event_id, &retry);
    if (n <= 1 || !retry) return r;
    impl_->current = (impl_->current + 1) % n;
    impl_->base = impl_->bases[impl_->current];
    if (attempt % n == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

Result<void> HttpClient::stream_once(const std::string& path, const SseHandler& on_event,
                                     const std::string& last_event_id, bool* retry) {
  CURL* c = impl_->curl;
  std::string extra = last_event_id.empty() ? "" : "Last-Event-ID: " + last_event_id;
  curl_slist* h = impl_->prepare("GET", path, std::chrono::milliseconds(0), "", extra);
  h = curl_slist_append(h, "Accept: text/event-stream");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  // A stream has no overall deadline; only the connect timeout applies.
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
  SseParser parser;
  parser.handler = &on_event;
  parser.curl = c;
  std::map<std::string, std::string> headers;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_sse);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &parser);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(h);
  if (parser.stopped) return ok_result();  // the handler asked to stop: not a failure
  if (rc != CURLE_OK) {
    *retry = never_sent(rc);
    return impl_->transport_error(rc, "GET", path, errbuf);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    HttpResponse r{status, parser.error_body, headers};
    *retry = from_standby(r);
    Errc code = status == 404   ? Errc::not_found
                : status == 401 ? Errc::unauthorized
                : status == 403 ? Errc::forbidden
                : status < 500  ? Errc::invalid_argument
                                : Errc::unavailable;
    return make_error(code, "GET " + impl_->base + path + ": " + r.error_message());
  }
  // The server closed the stream. An event without its closing blank line is incomplete and,
  // as the SSE specification says, dropped.
  return ok_result();
}

}  // namespace kfleet
