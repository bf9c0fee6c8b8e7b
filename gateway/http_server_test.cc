// The listener's pure parts: CheckHead's table and ReadRequest on whole
// requests (the sockets are tests/http_listener_test's).
#include "gateway/http_server.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mariposa::gateway {
namespace {

using ::testing::HasSubstr;
using Headers = std::vector<std::pair<std::string, std::string>>;

TEST(CheckHead, Table) {
  HttpLimits l;
  struct Case {
    std::string method;
    Headers headers;
    int64_t length;
    bool chunked;
    int status;
    std::string says;
  } cases[] = {
      {"GET", {{"host", "x"}}, -1, false, 0, ""},
      {"POST", {{"content-length", "2"}}, 2, false, 0, ""},
      {"POST", {{"transfer-encoding", "chunked"}}, -1, true, 0, ""},
      {"GET", {{"content-length", "0"}}, 0, false, 0, ""},
      {"GET", {{"content-length", "2"}}, 2, false, 400, "takes no body"},
      {"DELETE", {{"transfer-encoding", "chunked"}}, -1, true, 400, "takes no body"},
      {"POST", {{"content-length", "5"}, {"transfer-encoding", "chunked"}}, 5, true, 400, "both"},
      {"POST", {{"transfer-encoding", "gzip"}}, -1, false, 501, "not served"},
      {"POST", {{"content-length", "6000000"}}, 6000000, false, 413, "at most 5242880"},
      {"GET", {{"x-a", std::string("a\0b", 3)}}, -1, false, 400, "control byte"},
      {"GET", {{"x-a", "a\tb"}}, -1, false, 0, ""},
      {"POST", {{"expect", "200-ok"}}, -1, false, 417, "100-continue"},
      {"POST", {{"expect", "100-continue"}, {"content-length", "2"}}, 2, false, 0, ""},
  };
  for (const Case& c : cases) {
    HeadCheck h = CheckHead(c.method, c.headers, c.length, c.chunked, l);
    EXPECT_EQ(h.status, c.status) << c.method << " " << h.why;
    EXPECT_THAT(h.why, HasSubstr(c.says));
  }
  Headers many;
  for (int i = 0; i < 101; ++i) many.emplace_back("x-" + std::to_string(i), "y");
  EXPECT_EQ(CheckHead("GET", many, -1, false, l).status, 431);
}

TEST(ReadRequest, WholeRequestsPartialOnesAndRefusals) {
  HttpLimits l;
  HttpRequest r;
  HeadCheck h = ReadRequest(
      "POST /v1/admin:ping?a=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", l, &r);
  EXPECT_EQ(h.status, 0) << h.why;
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/admin:ping");
  EXPECT_EQ(r.query, "a=1");
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(r.header("HOST"), "h");
  r = HttpRequest();
  EXPECT_EQ(ReadRequest("GET / HTTP/1.1\r\nHost: h\r\n", l, &r).status, -1);
  r = HttpRequest();
  // The final chunk ended by a bare LF: incomplete, not a crash (fuzz/corpus).
  EXPECT_EQ(ReadRequest("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\n\r\n", l, &r).status, -1);
  r = HttpRequest();
  l.max_body = 4;
  EXPECT_EQ(ReadRequest("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", l, &r).status,
            413);
  r = HttpRequest();
  std::string big = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 2000; ++i) big += "X-" + std::to_string(i) + ": y\r\n";
  EXPECT_EQ(ReadRequest(big + "\r\n", l, &r).status, 431);
}

}  // namespace
}  // namespace mariposa::gateway
