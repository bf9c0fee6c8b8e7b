#include "gateway/errors.h"

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace mariposa::gateway {
namespace {

struct Code {
  const char* name;
  int http;
  const char* reason;
  bool refused;     // the server refused before changing anything
  const char* fix;  // when the message gives none
};

const Code kCodes[] = {
    {"OK", 200, "", true, ""},
    {"CANCELLED", 499, "the call was cancelled before it ended", false, "send the call again"},
    {"UNKNOWN", 500, "mariposad failed in a way it could not classify", false,
     "read mariposad's log (journalctl -u mariposad) for the call"},
    {"INVALID_ARGUMENT", 400, "the request is not valid", true,
     "correct what the message names and send the request again"},
    {"DEADLINE_EXCEEDED", 504, "the call did not end in time", false, "read the state back, then send the call again"},
    {"NOT_FOUND", 404, "what the request names does not exist, or the caller may not see it", true,
     "check the name (GET /v1/projects lists what you may see)"},
    {"ALREADY_EXISTS", 409, "what the request would create exists already", true,
     "use another name, or change the existing one"},
    {"PERMISSION_DENIED", 403, "the caller's roles do not allow this call", true,
     "ask an admin for a role that allows it (mariposa admin grant)"},
    {"RESOURCE_EXHAUSTED", 429, "a limit was reached", true, "make the request smaller, or wait and send it again"},
    {"FAILED_PRECONDITION", 400,
     "the state the call needs does not hold (a stale previous version, a freeze, a "
     "project being deleted)",
     true, "read the current state, then send the call again on top of it"},
    {"ABORTED", 409, "the call conflicted with another change", true,
     "read the current state, then send the call again"},
    {"OUT_OF_RANGE", 400, "a value is outside what is allowed", true,
     "give a value inside the range the message names"},
    {"UNIMPLEMENTED", 501, "mariposad does not do this", true, "see docs/http-api.md for what mariposad serves"},
    {"INTERNAL", 500, "mariposad failed", false, "read mariposad's log for the call; report it if it repeats"},
    {"UNAVAILABLE", 503, "mariposad cannot serve the call now", false,
     "send the call again; GET /v1/admin/status says why mariposad is not serving"},
    {"DATA_LOSS", 500, "stored data cannot be read", false, "see docs/operations.md (restore from a backup)"},
    {"UNAUTHENTICATED", 401, "the caller presented no credential mariposad accepts", true,
     "log in with a token (Authorization: Bearer mpt_…); an admin makes one with `mariposa admin token create`"},
};

const Code& CodeOf(int c) { return c >= 0 && c <= 16 ? kCodes[c] : kCodes[2]; }  // 2: UNKNOWN

}  // namespace

int HttpStatus(int grpc_code) { return CodeOf(grpc_code).http; }

std::string ErrorBody(int grpc_code, const std::string& message) {
  const Code& c = CodeOf(grpc_code);
  nlohmann::json j = {{"code", grpc_code}, {"status", c.name}, {"message", message}};
  std::string error = message, fix, impact, reason = c.reason;
  if (absl::StrContains(message, "Error:") && absl::StrContains(message, "\nFix:")) {
    for (absl::string_view line : absl::StrSplit(message, '\n')) {
      line = absl::StripLeadingAsciiWhitespace(line);
      auto take = [&](absl::string_view key, std::string* into) {
        if (!absl::ConsumePrefix(&line, key)) return false;
        *into = std::string(absl::StripAsciiWhitespace(line));
        return true;
      };
      if (take("Error:", &error) || take("Reason:", &reason) || take("Fix:", &fix) || take("Impact:", &impact))
        continue;
    }
  } else if (!absl::StrContains(message, "\n")) {
    size_t semi = message.find("; ");
    if (semi != std::string::npos) {
      error = message.substr(0, semi);
      fix = message.substr(semi + 2);
    }
  }
  if (fix.empty()) fix = c.fix;
  if (impact.empty()) {
    impact = c.refused ? "nothing was changed"
                       : "unknown whether the call took effect: read the state back before repeating it";
  }
  j["error"] = error;
  j["reason"] = reason;
  j["fix"] = fix;
  j["impact"] = impact;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mariposa::gateway
