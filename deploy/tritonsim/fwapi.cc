#include "deploy/tritonsim/fwapi.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {
namespace {

// fwrule's tokens: words, "quoted strings", ( ) , =.
std::vector<std::string> Tokens(const std::string& s, std::string* err) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')' || c == ',' || c == '=') {
      out.push_back(std::string(1, c));
      ++i;
    } else if (c == '"') {
      size_t end = s.find('"', i + 1);
      if (end == std::string::npos) {
        *err = "unterminated quoted string";
        return {};
      }
      out.push_back(s.substr(i, end - i + 1));
      i = end + 1;
    } else {
      size_t end = i;
      while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end])) &&
             std::string("(),=\"").find(s[end]) == std::string::npos) {
        ++end;
      }
      out.push_back(s.substr(i, end - i));
      i = end;
    }
  }
  return out;
}

// A recursive-descent check of the fwrule grammar (node-fwrule's parser.jison,
// the parts CloudAPI documents).
class RuleCheck {
 public:
  explicit RuleCheck(std::vector<std::string> t) : t_(std::move(t)) {}

  std::string Run() {
    if (!Word("from")) return Want("FROM");
    if (std::string e = Targets(); !e.empty()) return e;
    if (!Word("to")) return Want("TO");
    if (std::string e = Targets(); !e.empty()) return e;
    if (!Word("allow") && !Word("block")) return Want("ALLOW or BLOCK");
    if (std::string e = Protocol(); !e.empty()) return e;
    if (Word("priority") && !Number(0, 100)) return Want("a priority from 0 to 100");
    return at_ == t_.size() ? "" : absl::StrCat("unexpected \"", t_[at_], "\" after the rule");
  }

 private:
  std::string Peek() const { return at_ < t_.size() ? absl::AsciiStrToLower(t_[at_]) : ""; }
  bool Word(const std::string& w) {
    if (Peek() != w) return false;
    ++at_;
    return true;
  }
  bool Number(int64_t lo, int64_t hi) {
    int64_t n = 0;
    if (at_ >= t_.size() || !ParseInt(t_[at_], &n) || n < lo || n > hi) return false;
    ++at_;
    return true;
  }
  bool Value() {  // a word or a quoted string
    if (at_ >= t_.size() || t_[at_] == "(" || t_[at_] == ")" || t_[at_] == "," || t_[at_] == "=") return false;
    ++at_;
    return true;
  }
  std::string Want(const std::string& what) const {
    return absl::StrCat("expected ", what, at_ < t_.size() ? absl::StrCat(" at \"", t_[at_], "\"") : " at the end");
  }
  // any | all vms | ( target OR target ... ) | target
  std::string Targets() {
    if (Word("any")) return "";
    if (Word("all")) return Word("vms") ? "" : Want("VMS after ALL");
    if (!Word("(")) return Target();
    do {
      if (std::string e = Target(); !e.empty()) return e;
    } while (Word("or"));
    return Word(")") ? "" : Want("OR or )");
  }
  // ip IP | subnet CIDR | vm UUID | tag NAME [= VALUE]
  std::string Target() {
    if (Word("ip") || Word("subnet")) return Value() ? "" : Want("an address");
    if (Word("vm")) {
      std::string uuid = at_ < t_.size() ? t_[at_] : "";
      if (!IsUuid(uuid)) return Want("a VM uuid");
      ++at_;
      return "";
    }
    if (Word("tag")) {
      if (!Value()) return Want("a tag name");
      if (Word("=") && !Value()) return Want("a tag value");
      return "";
    }
    return Want("a target (any, all vms, ip, subnet, vm, tag)");
  }
  // tcp|udp ports; icmp|icmp6 types; ah|esp alone.
  std::string Protocol() {
    if (Word("tcp") || Word("udp")) return Ports();
    if (Word("icmp") || Word("icmp6")) return Types();
    if (Word("ah") || Word("esp")) return "";
    return Want("a protocol (tcp, udp, icmp, icmp6, ah, esp)");
  }
  // PORT n | ALL PORTS | PORTS n, a - b | ( PORT n AND PORT m ... )
  std::string Ports() {
    if (Word("all")) return Word("ports") ? "" : Want("PORTS after ALL");
    if (Word("ports")) {
      do {
        if (!Number(1, 65535)) return Want("a port from 1 to 65535");
        if (at_ < t_.size() && t_[at_].size() > 1 && t_[at_][0] == '-') return Want("spaces around - in a range");
        if (Word("-") && !Number(1, 65535)) return Want("the end of a port range");
      } while (Word(","));
      return "";
    }
    bool paren = Word("(");
    do {
      if (!Word("port")) return Want("PORT, PORTS or ALL PORTS");
      if (!Number(1, 65535)) return Want("a port from 1 to 65535");
    } while (paren && Word("and"));
    return !paren || Word(")") ? "" : Want("AND or )");
  }
  // TYPE n [CODE n] | ( TYPE n [CODE n] AND ... )
  std::string Types() {
    bool paren = Word("(");
    do {
      if (!Word("type")) return Want("TYPE");
      if (!Word("all") && !Number(0, 255)) return Want("an ICMP type from 0 to 255");
      if (Word("code") && !Number(0, 255)) return Want("an ICMP code from 0 to 255");
    } while (paren && Word("and"));
    return !paren || Word(")") ? "" : Want("AND or )");
  }

  std::vector<std::string> t_;
  size_t at_ = 0;
};

// FWAPI's errors: `code` and `message`, and the field at fault in `errors`.
Reply FwError(int status, const std::string& code, const std::string& message, const std::string& field,
              const std::string& field_code, const std::string& field_message) {
  Reply r = Validation(status, field, field_code, field_message);
  r.body["code"] = code;
  r.body["message"] = message;
  return r;
}

Reply InvalidRule(const std::string& field, const std::string& message) {
  return FwError(422, "InvalidParameters", "Invalid parameters", field, "InvalidParameter", message);
}

}  // namespace

std::string CheckFwRule(const std::string& rule) {
  std::string err;
  std::vector<std::string> t = Tokens(rule, &err);
  if (!err.empty()) return err;
  return RuleCheck(std::move(t)).Run();
}

json Firewall::RuleJson(const Rule& r) {
  json j = {{"uuid", r.uuid}, {"rule", r.rule}, {"enabled", r.enabled}, {"version", r.version}};
  if (r.global) j["global"] = true;
  else j["owner_uuid"] = r.owner_uuid;
  if (!r.description.empty()) j["description"] = r.description;
  if (r.log) j["log"] = true;
  return j;
}

std::string Firewall::Version() const {
  char frac[16];
  std::snprintf(frac, sizeof(frac), "%06d", static_cast<int>(now_ms_() % 1000000));
  return absl::StrCat(now_ms_(), ".", frac);
}

Reply Firewall::Fill(const json& body, Rule* r) const {
  if (!body.is_object()) return InvalidRule("rule", "the body must be a JSON object");
  for (const char* f : {"rule", "description", "owner_uuid", "uuid"}) {
    if (body.contains(f) && !body[f].is_string()) return InvalidRule(f, "must be a string");
  }
  for (const char* f : {"enabled", "global", "log"}) {
    if (body.contains(f) && !body[f].is_boolean()) return InvalidRule(f, "must be a boolean");
  }
  if (body.contains("rule")) r->rule = body["rule"];
  if (body.contains("description")) r->description = body["description"];
  if (body.contains("owner_uuid")) r->owner_uuid = body["owner_uuid"];
  r->enabled = body.value("enabled", r->enabled);
  r->global = body.value("global", r->global);
  r->log = body.value("log", r->log);
  if (std::string e = CheckFwRule(r->rule); !e.empty()) return InvalidRule("rule", absl::StrCat("Syntax error: ", e));
  if (!r->global && !IsUuid(r->owner_uuid)) {
    return InvalidRule("owner_uuid", r->owner_uuid.empty() ? "owner_uuid or global is required" : "Invalid UUID");
  }
  if (r->global && !r->owner_uuid.empty()) return InvalidRule("owner_uuid", "global rules have no owner_uuid");
  return Reply{};
}

Reply Firewall::List(const Params& q) {
  Reply r;
  if (!CheckParams(q, {"owner_uuid", "tag", "vm", "enabled", "global", "fields", "protocol", "ip", "subnet", "log"},
                   false, 422, &r)) {
    return r;
  }
  const std::string* owner = tritonsim::Get(q, "owner_uuid");
  const std::string* tag = tritonsim::Get(q, "tag");
  const std::string* enabled = tritonsim::Get(q, "enabled");
  r.body = json::array();
  absl::MutexLock l(&mu_);
  for (const auto& [uuid, rule] : rules_) {
    // An owner's listing includes the global rules, as FWAPI's does.
    if (owner != nullptr && !rule.global && rule.owner_uuid != *owner) continue;
    if (tag != nullptr && absl::AsciiStrToLower(rule.rule).find(absl::AsciiStrToLower(*tag)) == std::string::npos) {
      continue;
    }
    if (enabled != nullptr && (*enabled == "true") != rule.enabled) continue;
    r.body.push_back(RuleJson(rule));
  }
  return r;
}

Reply Firewall::Create(const json& body) {
  if (!body.is_object() || !body.contains("rule")) {
    return DataCenter::Error(409, "MissingParameter", "\"rule\" parameter required");
  }
  Rule rule;
  if (Reply bad = Fill(body, &rule); bad.status != 200) return bad;
  rule.uuid = body.value("uuid", "");
  if (!rule.uuid.empty() && !IsUuid(rule.uuid)) return InvalidRule("uuid", "Invalid UUID");
  absl::MutexLock l(&mu_);
  if (rule.uuid.empty()) rule.uuid = new_uuid_();
  if (rules_.count(rule.uuid)) {
    return FwError(422, "RuleExistsError", "rule already exists", "uuid", "Duplicate", "Already exists");
  }
  rule.version = Version();
  rules_[rule.uuid] = rule;
  return Accepted(rule);
}

// 202 with the rule and the id of the update FWAPI queues for the agents.
Reply Firewall::Accepted(const Rule& rule) const {
  Reply r;
  r.status = 202;
  r.headers["x-update-id"] = new_uuid_();
  r.body = RuleJson(rule);
  return r;
}

Reply Firewall::Get(const std::string& uuid, const Params& q) {
  absl::MutexLock l(&mu_);
  auto it = rules_.find(uuid);
  if (it == rules_.end()) return DataCenter::Error(404, "ResourceNotFound", "Rule not found");
  const std::string* owner = tritonsim::Get(q, "owner_uuid");
  if (owner != nullptr && !it->second.global && it->second.owner_uuid != *owner) {
    return FwError(403, "Forbidden", "owner does not match", "owner_uuid", "InvalidParameter",
                   "owner_uuid does not match");
  }
  Reply r;
  r.body = RuleJson(it->second);
  return r;
}

Reply Firewall::Update(const std::string& uuid, const json& body) {
  absl::MutexLock l(&mu_);
  auto it = rules_.find(uuid);
  if (it == rules_.end()) return DataCenter::Error(404, "ResourceNotFound", "Rule not found");
  Rule next = it->second;
  if (Reply bad = Fill(body, &next); bad.status != 200) return bad;
  next.uuid = uuid;  // never changed by an update
  next.version = Version();
  it->second = next;
  return Accepted(next);
}

Reply Firewall::Delete(const std::string& uuid, const Params& q) {
  Reply found = Get(uuid, q);
  if (found.status != 200) return found;
  absl::MutexLock l(&mu_);
  rules_.erase(uuid);
  Reply r;
  r.status = 204;
  r.headers["x-update-id"] = new_uuid_();
  return r;
}

size_t Firewall::size() const {
  absl::MutexLock l(&mu_);
  return rules_.size();
}

}  // namespace tritonsim
