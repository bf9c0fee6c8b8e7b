#include "deploy/tritonsim/changefeed.h"

#include <gtest/gtest.h>

namespace tritonsim {
namespace {

// A client's (masked) frame.
std::string Masked(int opcode, const std::string& payload, bool fin = true) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
  size_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  }
  out.append(reinterpret_cast<const char*>(mask), 4);
  for (size_t k = 0; k < n; ++k) out.push_back(static_cast<char>(payload[k] ^ mask[k % 4]));
  return out;
}

TEST(WebSocket, AcceptKeyIsRfc6455Example) {
  // RFC 6455 section 1.3.
  EXPECT_EQ(WebSocketAccept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocket, DecodesMaskedFramesWholeOrInPieces) {
  struct Case {
    int opcode;
    std::string payload;
  };
  for (const Case& c : {Case{1, "heartbeat"}, Case{1, std::string(300, 'x')}, Case{9, ""}, Case{8, "\x03\xe8"}}) {
    std::string wire = Masked(c.opcode, c.payload) + "rest";
    for (size_t cut = 0; cut < wire.size() - 4; ++cut) {
      WsFrame f;
      std::string why;
      EXPECT_EQ(DecodeWsFrame(wire.substr(0, cut), 1 << 20, &f, &why), 0) << "cut at " << cut;
    }
    WsFrame f;
    std::string why;
    long used = DecodeWsFrame(wire, 1 << 20, &f, &why);
    EXPECT_EQ(used, static_cast<long>(wire.size() - 4));
    EXPECT_EQ(f.opcode, c.opcode);
    EXPECT_EQ(f.payload, c.payload);
    EXPECT_TRUE(f.fin);
  }
}

TEST(WebSocket, RefusesWhatRfc6455Forbids) {
  struct Case {
    std::string wire, why;
  };
  std::string unmasked = EncodeWsFrame(1, "x");
  std::string rsv = Masked(1, "x");
  rsv[0] = static_cast<char>(rsv[0] | 0x40);
  for (const Case& c : {Case{unmasked, "masked"}, Case{rsv, "reserved"},
                        Case{Masked(9, std::string(126, 'p')), "control"}, Case{Masked(9, "p", false), "control"},
                        Case{Masked(1, std::string(200, 'y')), "larger than 100"}}) {
    WsFrame f;
    std::string why;
    EXPECT_EQ(DecodeWsFrame(c.wire, 100, &f, &why), -1);
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
}

TEST(WebSocket, EncodesEachLengthForm) {
  for (size_t n : {0, 125, 126, 65535, 65536}) {
    std::string f = EncodeWsFrame(1, std::string(n, 'a'));
    EXPECT_EQ(static_cast<unsigned char>(f[0]), 0x81);
    size_t header = n < 126 ? 2 : n < 65536 ? 4 : 10;
    EXPECT_EQ(f.size(), header + n) << n;
    EXPECT_EQ(static_cast<unsigned char>(f[1]) & 0x80, 0) << "a server's frames are not masked";
  }
  std::string close = EncodeWsClose(1001, "going away");
  EXPECT_EQ(close.substr(2, 2), std::string("\x03\xe9"));
  EXPECT_EQ(close.substr(4), "going away");
}

TEST(ChangedKeys, NamesTopLevelKeysWhoseValuesDiffer) {
  struct Case {
    std::string before, after;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"", R"({"uuid":"a","state":"provisioning"})", {"uuid", "state"}},
      {R"({"uuid":"a","state":"provisioning"})", R"({"uuid":"a","state":"running"})", {"state"}},
      {R"({"a":1,"tags":{"x":"1","y":[1,2]}})", R"({"a":1,"tags":{"x":"1","y":[1,3]}})", {"tags"}},
      {R"({"a":"has \"quote\", and comma","b":2})", R"({"a":"has \"quote\", and comma","b":3})", {"b"}},
      {R"({"a":1,"gone":true})", R"({"a":1})", {"gone"}},
      {R"({"nics":[{"ip":"10.0.0.2"}],"s":"x"})", R"({"nics":[{"ip":"10.0.0.2"}],"s":"x"})", {}},
      {R"({"a":{"b":{"c":[{}]}},"z":null})", R"({"a":{"b":{"c":[{"d":1}]}},"z":null})", {"a"}},
      // Keys in another order: compared by name past the first that differs.
      {R"({"a":1,"b":2,"c":3})", R"({"b":2,"a":5,"d":1})", {"a", "d", "c"}},
      {R"({"a":1,"b":2,"c":3,"e":4})", R"({"a":1,"c":3,"b":2})", {"e"}},
  };
  for (const Case& c : cases) EXPECT_EQ(ChangedKeys(c.before, c.after), c.want) << c.before << " -> " << c.after;
}

}  // namespace
}  // namespace tritonsim
