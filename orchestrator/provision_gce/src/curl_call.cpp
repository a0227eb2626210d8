#include "curl_call.hpp"

#include <curl/curl.h>

#include <cctype>
#include <mutex>

namespace kfleet::provision::gce {
namespace {

std::size_t on_data(char* ptr, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(ptr, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

Result<Answer> call(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                    const std::string& body, std::chrono::milliseconds timeout) {
  global_init();
  CURL* h = curl_easy_init();
  if (!h) return make_error(Errc::internal, "curl_easy_init failed");
  Answer a;
  curl_slist* list = nullptr;
  for (const auto& x : headers) list = curl_slist_append(list, x.c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (method == "POST" || method == "PUT" || method == "PATCH") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(h);
  if (rc != CURLE_OK)
    return make_error(Errc::unavailable, method + " " + url + ": " + curl_easy_strerror(rc));
  return a;
}

std::string form_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace kfleet::provision::gce
