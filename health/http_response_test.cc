// The plain-http checks' reply reader: a table of replies, each read whole,
// byte by byte and in random pieces (the result must not depend on how the
// bytes arrived).
#include "health/http_response.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mariposa::health {
namespace {

using State = HttpResponseReader::State;

struct Case {
  std::string name;
  std::string reply;
  bool close_after = false;  // the peer closes after `reply`
  bool head = false;
  size_t body_limit = 64 * 1024;
  size_t keep = 64 * 1024;
  State state;
  int status = 0;
  std::string body;
  bool reusable = false;
  bool truncated = false;
  std::string error;  // a part of the error, when state is kError
};

struct Outcome {
  State state;
  int status;
  std::string body;
  bool reusable, truncated;
  std::string error;
};

Outcome Read(const Case& c, const std::vector<size_t>& cuts) {
  HttpResponseReader r(c.head, c.body_limit, c.keep);
  size_t at = 0;
  for (size_t cut : cuts) {  // every piece, also after the end (bytes past it count)
    r.Feed(std::string_view(c.reply).substr(at, cut - at));
    at = cut;
  }
  if (at < c.reply.size()) r.Feed(std::string_view(c.reply).substr(at));
  if (c.close_after) r.Close();
  return {r.state(), r.status(), r.body(), r.reusable(), r.truncated(), r.error()};
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"length, kept", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, false, 65536, 65536, State::kDone, 200,
       "ok", true},
      {"Connection: close", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", false, false, 65536,
       65536, State::kDone, 200, "ok", false},
      {"HTTP/1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, false, 65536, 65536, State::kDone,
       200, "ok", false},
      {"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", false, false,
       65536, 65536, State::kDone, 200, "ok", true},
      {"chunked, extensions, trailers",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
       false, false, 65536, 65536, State::kDone, 200, "hello world", true},
      {"chunked wins over length",
       "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false, false,
       65536, 65536, State::kDone, 200, "ok", true},
      {"to the close", "HTTP/1.1 503 Down\r\n\r\nnot yet", true, false, 65536, 65536, State::kDone, 503, "not yet",
       false},
      {"to the close, not closed yet", "HTTP/1.1 200 OK\r\n\r\nmore to come", false, false, 65536, 65536, State::kMore,
       200, "more to come", false},
      {"gzip then to the close", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\nabc", true,
       false, 65536, 65536, State::kDone, 200, "abc", false},
      {"HEAD has no body", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", false, true, 65536, 65536, State::kDone,
       200, "", true},
      {"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", false, false, 65536, 65536, State::kDone, 204, "", true},
      {"304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n", false, false, 65536, 65536,
       State::kDone, 304, "", true},
      {"100 Continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false,
       false, 65536, 65536, State::kDone, 200, "ok", true},
      {"101 ends HTTP", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false, false, 65536, 65536,
       State::kDone, 101, "", false},
      {"LF alone ends lines", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false, false, 65536, 65536, State::kDone, 200,
       "ok", true},
      {"no reason phrase", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, false, 65536, 65536, State::kDone, 200,
       "", true},
      {"a body over the limit", "HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n" + std::string(100, 'z'), false,
       false, 10, 4, State::kDone, 200, "zzzz", false, true},
      {"a chunked body over the limit",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\nabcdefgh\r\n0\r\n\r\n", false, false,
       8, 8, State::kDone, 200, "12345678", false, true},
      {"past the limit nothing more is read (fuzz)",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678 not the CRLF a chunk ends with", false, false,
       4, 4, State::kDone, 200, "1234", false, true},
      {"a body of the limit exactly", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", false, false, 4, 4,
       State::kDone, 200, "abcd", true},
      {"kept body only when asked", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", false, false, 65536, 0,
       State::kDone, 200, "", true},
      {"bytes after the reply", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", false, false, 65536, 65536,
       State::kDone, 200, "ok", false},
      {"same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false, false, 65536,
       65536, State::kDone, 200, "ok", true},
      // Refused.
      {"not HTTP", "SSH-2.0-OpenSSH_9.2\r\n", false, false, 65536, 65536, State::kError, 0, "", false, false,
       "the reply is not HTTP/1.x: \"SSH-2.0-OpenSSH_9.2\""},
      {"HTTP/2", "HTTP/2 200\r\n\r\n", false, false, 65536, 65536, State::kError, 0, "", false, false, "not HTTP/1.x"},
      {"no status code", "HTTP/1.1 2x0 OK\r\n\r\n", false, false, 65536, 65536, State::kError, 0, "", false, false,
       "has no status code"},
      {"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", false, false, 65536, 65536,
       State::kError, 200, "", false, false, "two different Content-Length"},
      {"length not a number", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, false, 65536, 65536,
       State::kError, 200, "", false, false, "Content-Length is not a number"},
      {"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false, 65536, 65536,
       State::kError, 200, "", false, false, "chunk size is not hexadecimal"},
      {"chunk longer than said", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay\r\n", false, false,
       65536, 65536, State::kError, 200, "ok", false, false, "longer than its size"},
      {"header without a name", "HTTP/1.1 200 OK\r\n: x\r\n\r\n", false, false, 65536, 65536, State::kError, 200, "",
       false, false, "has no name"},
      {"a head too large", "HTTP/1.1 200 OK\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", false, false, 65536, 65536,
       State::kError, 200, "", false, false, "larger than 16384 bytes"},
      {"closed before a reply", "", true, false, 65536, 65536, State::kError, 0, "", false, false,
       "closed before any reply"},
      {"closed in the body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", true, false, 65536, 65536, State::kError,
       200, "ok", false, false, "closed in the middle of the reply"},
      {"closed in the head", "HTTP/1.1 200 OK\r\nContent-Le", true, false, 65536, 65536, State::kError, 200, "", false,
       false, "closed in the middle of the reply"},
  };
  return *cases;
}

void Expect(const Case& c, const Outcome& o, const std::string& how) {
  SCOPED_TRACE(c.name + " (" + how + ")");
  EXPECT_EQ(o.state, c.state) << o.error;
  EXPECT_EQ(o.status, c.status);
  EXPECT_EQ(o.body, c.body);
  EXPECT_EQ(o.reusable, c.reusable);
  EXPECT_EQ(o.truncated, c.truncated);
  if (c.state == State::kError) {
    EXPECT_NE(o.error.find(c.error), std::string::npos) << o.error;
  } else {
    EXPECT_EQ(o.error, "");
  }
}

TEST(HttpResponseReaderTest, Table) {
  for (const Case& c : Cases()) Expect(c, Read(c, {}), "whole");
}

TEST(HttpResponseReaderTest, ByteByByte) {
  for (const Case& c : Cases()) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < c.reply.size(); ++i) cuts.push_back(i);
    Expect(c, Read(c, cuts), "byte by byte");
  }
}

TEST(HttpResponseReaderTest, RandomPieces) {
  std::mt19937 gen(49);
  for (int round = 0; round < 200; ++round) {
    for (const Case& c : Cases()) {
      std::vector<size_t> cuts;
      for (size_t i = 1; i < c.reply.size(); ++i) {
        if (gen() % 7 == 0) cuts.push_back(i);
      }
      Expect(c, Read(c, cuts), "pieces of round " + std::to_string(round));
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace mariposa::health
