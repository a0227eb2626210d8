#pragma once
// An HTTP/1.1 server on 127.0.0.1 (port 0) with a thread of its own, for the fake cloud APIs
// that the provisioners' tests talk to (fake_gce, fake_ec2). Each request goes to the handler on
// that thread, one at a time per connection; the server adds the version, keep-alive and length.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace kfleet::provision::testing {

class LoopbackHttpServer {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Handler = std::function<Response(const Request&)>;
  // A response carrying this header loses its body on the way: the server sends the status
  // line and headers, then closes the connection (a connection dropped mid-answer).
  static constexpr const char* kCutHeader = "X-Loopback-Cut";

  explicit LoopbackHttpServer(Handler handler);  // listening before it returns
  ~LoopbackHttpServer();                         // stops the thread; no handler call after it
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  std::string base_url() const;  // "http://127.0.0.1:<port>"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "a%2Fb+c" -> "a/b c" (application/x-www-form-urlencoded).
std::string url_decode(const std::string& s);
// "k=v&k2=v2", decoded; a key may repeat.
std::multimap<std::string, std::string> parse_form(const std::string& body);

}  // namespace kfleet::provision::testing
