// Value's writers: JSON quoting against the plain byte-by-byte rule it
// replaced (every stored version's canonical text and hash depend on it:
// projects/canonical_golden_test.cc), over random byte strings weighted
// toward the bytes that are escaped, and the YAML and JSON of a tree.
#include "common/value.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_format.h"

namespace mariposa {
namespace {

// The rule as first written: one byte at a time.
std::string ReferenceQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    auto next = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
    if (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {  // NEL and the C1 controls
      out += absl::StrFormat("\\u%04x", next(1));
      i += 1;
      continue;
    }
    if (c == 0xef && next(1) == 0xbf && (next(2) == 0xbe || next(2) == 0xbf)) {  // U+FFFE, U+FFFF
      out += next(2) == 0xbe ? "\\ufffe" : "\\uffff";
      i += 2;
      continue;
    }
    if (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {
      out += next(2) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
      continue;
    }
    if (c == 0xef && next(1) == 0xbb && next(2) == 0xbf) {
      out += "\\ufeff";
      i += 2;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += absl::StrFormat("\\u%04x", c);
        else out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

TEST(ValueTest, JsonQuotingMatchesTheByteByByteRule) {
  const unsigned char kHot[] = {'"', '\\', '\n', '\r', '\t', 0, 0x1f, 0x7f, 0xc2, 0x85, 0xe2,
                                0x80, 0xa8, 0xa9, 0xef, 0xbb, 0xbf, 'a', ' ', 0xc3, 0x9f, 0xbe};
  std::mt19937 rng(49);
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    int n = rng() % 12;
    for (int k = 0; k < n; ++k) {
      s.push_back(static_cast<char>(rng() % 3 == 0 ? rng() % 256 : kHot[rng() % sizeof(kHot)]));
    }
    ASSERT_EQ(JsonQuote(s), ReferenceQuote(s)) << "round " << round;
    std::string appended = "x";
    AppendJsonQuoted(s, &appended);
    ASSERT_EQ(appended, "x" + ReferenceQuote(s));
  }
}

TEST(ValueTest, TreesWriteAsBefore) {
  Value v = Value::Map();
  v.Append("list", Value::List().Add(Value::Str("a")).Add(Value::Int(3)).Add(Value::Map()));
  v.Append("map", Value::Map().Append("k", Value::Str("yes")).Append("d", Value::Double(1.5)));
  v.Append("empty", Value::List());
  v.Append("n", Value());
  EXPECT_EQ(v.ToJson(), R"({"list":["a",3,{}],"map":{"k":"yes","d":1.5},"empty":[],"n":null})");
  EXPECT_EQ(v.ToJson(true),
            "{\n  \"list\": [\n    \"a\",\n    3,\n    {}\n  ],\n  \"map\": {\n    \"k\": \"yes\",\n    \"d\": 1.5\n  },"
            "\n  \"empty\": [],\n  \"n\": null\n}");
  EXPECT_EQ(v.ToYaml(), "list:\n  - a\n  - 3\n  - {}\nmap:\n  k: \"yes\"\n  d: 1.5\nempty: []\n\"n\": null\n");  // "n" reads as a boolean: quoted
}

}  // namespace
// FromEntries gives the same map as FromMap, whatever order the entries
// came in, and AppendJson the same text as ToJson.
TEST(ValueTest, EntriesInAnyOrderMakeTheSortedMap) {
  std::map<std::string, Value> m{{"b", Value::Int(2)}, {"a", Value::Str("x")}, {"c", Value::List().Add(Value::Bool(true))}};
  const std::string want = Value::FromMap(m).ToJson();
  EXPECT_EQ(want, R"({"a":"x","b":2,"c":[true]})");
  for (std::vector<std::string> order : {std::vector<std::string>{"a", "b", "c"}, {"c", "b", "a"}, {"b", "c", "a"}}) {
    std::vector<std::pair<std::string, Value>> e;
    for (const auto& k : order) e.emplace_back(k, m.at(k));
    Value v = Value::FromEntries(std::move(e));
    EXPECT_EQ(v.ToJson(), want) << order[0] << order[1] << order[2];
    EXPECT_EQ(v.ToYaml(), Value::FromMap(m).ToYaml());
    std::string appended = "[";
    v.AppendJson(&appended);
    EXPECT_EQ(appended, "[" + want);
  }
}

}  // namespace mariposa
