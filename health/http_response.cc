#include "health/http_response.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace mariposa::health {
namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk size, its extensions and the CRLF after a chunk

// What a user reads of a line that is not what it should be: its first 40
// bytes, control bytes escaped.
std::string Quoted(absl::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 40)) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return absl::StrCat(out, s.size() > 40 ? "\"…" : "\"");
}

bool ParseDecimal(absl::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;  // 18 digits: no overflow
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

bool ParseHex(absl::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 15) return false;  // 15 digits: no overflow
  uint64_t v = 0;
  for (char c : s) {
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                        : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace

HttpResponseReader::HttpResponseReader(bool head_request, size_t body_limit, size_t keep_body)
    : head_request_(head_request), body_limit_(body_limit), keep_body_(std::min(keep_body, body_limit)) {}

HttpResponseReader::State HttpResponseReader::Fail(std::string why) {
  error_ = std::move(why);
  state_ = State::kError;
  return state_;
}

HttpResponseReader::State HttpResponseReader::Finish() {
  phase_ = Phase::kEnd;
  state_ = State::kDone;
  return state_;
}

void HttpResponseReader::TakeBody(absl::string_view data) {
  size_t room = static_cast<size_t>(body_limit_ - body_read_);
  size_t n = std::min(data.size(), room);
  size_t keep = std::min(n, keep_body_ - body_.size());
  body_.append(data.data(), keep);
  body_read_ += n;
  if (data.size() > room) truncated_ = true;
}

HttpResponseReader::State HttpResponseReader::Feed(std::string_view in) {
  absl::string_view data(in.data(), in.size());
  if (!data.empty()) got_bytes_ = true;
  while (!data.empty() && state_ == State::kMore) {
    switch (phase_) {
      case Phase::kLengthBody:
      case Phase::kChunkData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(length_, data.size()));
        TakeBody(data.substr(0, n));
        data.remove_prefix(n);
        length_ -= n;
        if (truncated_ || (length_ > 0 && body_read_ >= body_limit_)) {
          truncated_ = true;  // more than body_limit: read no further
          return Finish();
        }
        if (length_ == 0) {
          if (phase_ == Phase::kLengthBody) {
            Finish();
            continue;  // the loop ends; what follows is extra (below)
          }
          phase_ = Phase::kChunkDataEnd;
        }
        continue;
      }
      case Phase::kToClose:
        TakeBody(data);
        data = {};
        if (truncated_) return Finish();
        continue;
      case Phase::kEnd:
        data = {};
        continue;
      default:
        break;
    }
    // A line: the status, a header, a chunk size, the CRLF after a chunk or a trailer.
    bool head = phase_ == Phase::kStatus || phase_ == Phase::kHeaders || phase_ == Phase::kTrailers;
    size_t limit = head ? kMaxHead - std::min(kMaxHead, head_bytes_) : kMaxChunkLine;
    size_t nl = data.find('\n');
    size_t take = nl == absl::string_view::npos ? data.size() : nl + 1;
    if (line_.size() + take > limit) {
      return Fail(head ? absl::StrCat("the response's head is larger than ", kMaxHead, " bytes")
                       : "a chunk size line is longer than 1024 bytes");
    }
    if (nl == absl::string_view::npos) {
      line_.append(data.data(), take);  // the rest of the line comes later
      break;
    }
    // A line whole in `data` is read where it is; one begun earlier is
    // completed in line_.
    absl::string_view line = data.substr(0, take);
    if (!line_.empty()) {
      line_.append(data.data(), take);
      line = line_;
    }
    data.remove_prefix(take);
    if (head) head_bytes_ += line.size();
    line.remove_suffix(1);  // '\n'
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    State st = Line(line);
    line_.clear();
    if (st != State::kMore) break;
  }
  if (!data.empty() && state_ == State::kDone) extra_ = true;
  return state_;
}

HttpResponseReader::State HttpResponseReader::Line(absl::string_view line) {
  switch (phase_) {
    case Phase::kStatus: {
      if (line.empty()) return state_;  // blank lines before a status line are tolerated
      // HTTP/1.x SP 3DIGIT [SP reason]
      if (!absl::StartsWith(line, "HTTP/1.") || line.size() < 12 || !std::isdigit(static_cast<unsigned char>(line[7])) ||
          line[8] != ' ') {
        return Fail(absl::StrCat("the reply is not HTTP/1.x: ", Quoted(line)));
      }
      uint64_t code = 0;
      if (!ParseDecimal(line.substr(9, 3), &code) || code < 100 || (line.size() > 12 && line[12] != ' ')) {
        return Fail(absl::StrCat("the status line has no status code: ", Quoted(line)));
      }
      status_ = static_cast<int>(code);
      http10_ = line[7] == '0';
      phase_ = Phase::kHeaders;
      return state_;
    }
    case Phase::kHeaders: {
      if (line.empty()) return HeadersDone();
      if (line[0] == ' ' || line[0] == '\t') return state_;  // an obsolete folded line: nothing we read
      size_t colon = line.find(':');
      if (colon == absl::string_view::npos || colon == 0) {
        return Fail(absl::StrCat("a header line has no name: ", Quoted(line)));
      }
      absl::string_view name = line.substr(0, colon);
      absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
      if (absl::EqualsIgnoreCase(name, "Content-Length")) {
        uint64_t n = 0;
        if (!ParseDecimal(value, &n)) return Fail(absl::StrCat("Content-Length is not a number: ", Quoted(value)));
        if (has_length_ && n != length_) return Fail("two different Content-Length headers");
        has_length_ = true;
        length_ = n;
      } else if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
        std::vector<absl::string_view> codings = absl::StrSplit(value, ',');
        chunked_ = absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(codings.back()), "chunked");
        te_to_close_ = !chunked_;  // another coding last: the body ends at the close
      } else if (absl::EqualsIgnoreCase(name, "Connection")) {
        for (absl::string_view token : absl::StrSplit(value, ',')) {
          token = absl::StripAsciiWhitespace(token);
          if (absl::EqualsIgnoreCase(token, "close")) close_header_ = true;
          if (absl::EqualsIgnoreCase(token, "keep-alive")) keep_alive_header_ = true;
        }
      }
      return state_;
    }
    case Phase::kChunkSize: {
      absl::string_view size = line.substr(0, line.find(';'));
      size = absl::StripAsciiWhitespace(size);
      uint64_t n = 0;
      if (!ParseHex(size, &n)) return Fail(absl::StrCat("a chunk size is not hexadecimal: ", Quoted(line)));
      if (n == 0) {
        phase_ = Phase::kTrailers;
        return state_;
      }
      if (body_read_ >= body_limit_) {
        truncated_ = true;
        return Finish();
      }
      length_ = n;
      phase_ = Phase::kChunkData;
      return state_;
    }
    case Phase::kChunkDataEnd:
      if (!line.empty()) return Fail(absl::StrCat("a chunk is longer than its size said: ", Quoted(line)));
      phase_ = Phase::kChunkSize;
      return state_;
    case Phase::kTrailers:
      if (line.empty()) return Finish();
      return state_;
    default:
      return state_;
  }
}

HttpResponseReader::State HttpResponseReader::HeadersDone() {
  if (status_ < 200 && status_ != 101) {
    // An interim response (100 Continue, 103 Early Hints): the real one follows.
    status_ = 0;
    has_length_ = chunked_ = te_to_close_ = close_header_ = keep_alive_header_ = false;
    length_ = 0;
    head_bytes_ = 0;
    phase_ = Phase::kStatus;
    return state_;
  }
  keep_alive_ = http10_ ? keep_alive_header_ && !close_header_ : !close_header_;
  if (status_ == 101) {
    keep_alive_ = false;  // no longer HTTP on this connection
    return Finish();
  }
  if (head_request_ || status_ == 204 || status_ == 304) return Finish();
  if (chunked_) {
    phase_ = Phase::kChunkSize;
  } else if (has_length_ && !te_to_close_) {
    if (length_ == 0) return Finish();
    phase_ = Phase::kLengthBody;
  } else {
    keep_alive_ = false;
    phase_ = Phase::kToClose;
  }
  return state_;
}

HttpResponseReader::State HttpResponseReader::Close() {
  if (state_ != State::kMore) return state_;
  if (phase_ == Phase::kToClose) return Finish();
  if (!got_bytes_) return Fail("the connection was closed before any reply");
  return Fail("the connection was closed in the middle of the reply");
}

}  // namespace mariposa::health
