// kfleet::HttpClient against a real (canned) HTTP/1.1 server on an ephemeral port.
#include <gtest/gtest.h>

#include <chrono>

#include "canned_http_server.hpp"
#include "kfleet/common/http_client.hpp"

using kfleet::HttpClient;
using kfleet::testing::CannedHttpServer;
using kfleet::testing::CannedReply;
using kfleet::testing::SeenRequest;

namespace {

CannedReply route(const SeenRequest& r) {
  if (r.target == "/echo") {
    nlohmann::json j{{"method", r.method}, {"body", r.body}, {"auth", r.authorization},
                     {"ctype", r.content_type}};
    CannedReply c;
    c.body = j.dump();
    c.headers = {{"X-Kfleet-Thing", "42"}};
    return c;
  }
  if (r.target == "/fail") {
    return {409, R"({"error":{"code":"stale_token","message":"the lease moved on"}})"};
  }
  if (r.target == "/plain-fail") return {502, "bad gateway", "text/plain"};
  if (r.target == "/not-json") return {200, "<html>hi</html>", "text/html"};
  if (r.target.rfind("/sse", 0) == 0) {
    CannedReply c;
    c.raw_chunks = {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        ": a comment line\n\nid: 7\nevent: stage.started\ndata: {\"stage\":",
        "\"build\"}\n\n",
        "id: 8\r\ndata: line one\r\ndata: line two\r\n\r\n",
        "data: no id change\n\n",
        "id: 9\nevent: tail\ndata: incomplete",  // no blank line: must not be dispatched
    };
    return c;
  }
  return {404, R"({"error":{"code":"not_found","message":"no route"}})"};
}

struct SseSeen {
  std::string id, event, data;
};

}  // namespace

TEST(HttpClient, PostsJsonWithBearerTokenAndCapturesLowerCaseHeaders) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url() + "/", "tok-123");
  auto r = c.post_json("/echo", {{"a", 1}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  auto j = r->json();
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["method"], "POST");
  EXPECT_EQ((*j)["auth"], "Bearer tok-123");
  EXPECT_EQ((*j)["ctype"], "application/json");
  EXPECT_EQ(nlohmann::json::parse((*j)["body"].get<std::string>())["a"], 1);
  EXPECT_EQ(r->headers.at("x-kfleet-thing"), "42");
  EXPECT_EQ(r->headers.at("content-type"), "application/json");
}

TEST(HttpClient, KeepsOneConnectionAcrossRequests) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url());
  for (int i = 0; i < 4; ++i) {
    auto r = c.get("/echo");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r->json())["auth"], "");  // no token set: no Authorization header
  }
  EXPECT_EQ(srv.connections(), 1);
  c.set_token("later");
  auto r = c.get("/echo");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r->json())["auth"], "Bearer later");
}

TEST(HttpClient, ErrorStatusIsAResponseWithTheApiMessage) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url());
  auto r = c.post_json("/fail", nlohmann::json::object());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->error_message(), "the lease moved on");
  auto p = c.get("/plain-fail");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->error_message(), "HTTP 502: bad gateway");
  auto n = c.get("/not-json");
  ASSERT_TRUE(n.ok());
  auto j = n->json();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("not JSON"), std::string::npos);
}

TEST(HttpClient, RefusedConnectionIsUnavailable) {
  std::string url;
  {
    CannedHttpServer srv(route);
    url = srv.url();
  }  // the port is closed now
  HttpClient c(url, "", kfleet::HttpOptions{std::chrono::milliseconds(500),
                                            std::chrono::milliseconds(1000)});
  auto r = c.get("/echo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kfleet::Errc::unavailable);
  EXPECT_NE(r.error().message.find(url), std::string::npos);
}

TEST(HttpClient, TimesOutOnASilentServer) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::acceptor acc(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  HttpClient c("http://127.0.0.1:" + std::to_string(acc.local_endpoint().port()));
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.get("/x", std::chrono::milliseconds(300));  // listen backlog accepts; nobody answers
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kfleet::Errc::unavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(HttpClient, StreamsServerSentEvents) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url(), "t");
  std::vector<SseSeen> got;
  auto r = c.stream_sse(
      "/sse",
      [&](const std::string& id, const std::string& ev, const std::string& data) {
        got.push_back({id, ev, data});
        return true;
      },
      "6");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].id, "7");
  EXPECT_EQ(got[0].event, "stage.started");
  EXPECT_EQ(got[0].data, R"({"stage":"build"})");
  EXPECT_EQ(got[1].id, "8");
  EXPECT_EQ(got[1].event, "message");
  EXPECT_EQ(got[1].data, "line one\nline two");
  EXPECT_EQ(got[2].id, "8");  // the last id persists
  EXPECT_EQ(got[2].data, "no id change");
  auto seen = srv.requests();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().last_event_id, "6");
  EXPECT_EQ(seen.back().authorization, "Bearer t");
}

TEST(HttpClient, StreamStopsWhenHandlerReturnsFalse) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url());
  int calls = 0;
  auto r = c.stream_sse("/sse", [&](const std::string&, const std::string&, const std::string&) {
    ++calls;
    return false;
  });
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(calls, 1);
  // The handle stays usable after an aborted transfer.
  auto g = c.get("/echo");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->status, 200);
}

TEST(HttpClient, StreamOnErrorStatusFailsWithTheMessage) {
  CannedHttpServer srv(route);
  HttpClient c(srv.url());
  auto r = c.stream_sse("/nope", [](const std::string&, const std::string&, const std::string&) {
    return true;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kfleet::Errc::not_found);
  EXPECT_NE(r.error().message.find("no route"), std::string::npos);
}

// Several URLs (a kfleetd leader and its standbys): a refused connection or a standby's 503
// moves the request on to the next URL, and the client stays with the one that answered.
TEST(HttpClient, MovesOnFromRefusedAndStandbyServersToTheOneThatAnswers) {
  CannedHttpServer standby([](const SeenRequest&) {
    CannedReply c{503, R"({"error":{"code":"standby","message":"a standby"}})"};
    c.headers = {{"X-Kfleet-Role", "standby"}};
    return c;
  });
  CannedHttpServer leader(route);
  // 127.0.0.1:1 refuses connections.
  HttpClient c("http://127.0.0.1:1, " + standby.url() + "," + leader.url(), "tok");
  auto r = c.post_json("/echo", {{"a", 1}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.base_url(), leader.url());
  auto again = c.get("/echo");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 200);

  // A plain 503 (not a standby's) is an answer, not a reason to move on.
  CannedHttpServer busy([](const SeenRequest&) { return CannedReply{503, "{}"}; });
  HttpClient b(busy.url() + "," + leader.url(), "tok");
  auto br = b.get("/echo");
  ASSERT_TRUE(br.ok());
  EXPECT_EQ(br->status, 503);
  EXPECT_EQ(b.base_url(), busy.url());
}
