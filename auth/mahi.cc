#include "auth/mahi.h"

#include <nlohmann/json.hpp>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace mariposa::auth {
namespace {

using json = nlohmann::json;

std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

bool Disabled(const json& o) {
  auto it = o.find("disabled");
  if (it == o.end()) return false;
  return (it->is_boolean() && it->get<bool>()) || (it->is_string() && it->get<std::string>() == "true");
}

std::map<std::string, std::string> Keys(const json& o) {
  std::map<std::string, std::string> out;
  auto it = o.find("keys");
  if (it == o.end() || !it->is_object()) return out;
  for (auto k = it->begin(); k != it->end(); ++k) {
    if (k.value().is_string()) out[k.key()] = k.value().get<std::string>();
  }
  return out;
}

}  // namespace

absl::StatusOr<TritonPrincipal> ParseMahiAnswer(absl::string_view text, absl::string_view user) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("account") || !j["account"].is_object()) {
    return absl::InvalidArgumentError("mahi's answer is not {\"account\": {…}}");
  }
  const json& a = j["account"];
  TritonPrincipal p;
  p.account_uuid = Str(a, "uuid");
  p.account_login = Str(a, "login");
  if (p.account_uuid.empty() || p.account_login.empty()) {
    return absl::InvalidArgumentError("mahi's account has no uuid or login");
  }
  p.disabled = Disabled(a);
  if (user.empty()) {
    p.keys = Keys(a);
    return p;
  }
  if (!j.contains("user") || !j["user"].is_object()) {
    return absl::NotFoundError(absl::StrCat("account ", p.account_login, " has no user ", user));
  }
  const json& u = j["user"];
  p.user_uuid = Str(u, "uuid");
  p.user_login = Str(u, "login");
  if (p.user_login != user) return absl::InvalidArgumentError("mahi answered for another user than the one asked");
  p.disabled = p.disabled || Disabled(u);
  p.keys = Keys(u);
  // Active roles: the user's defaultRoles (CloudAPI's, without as-role),
  // named through the answer's roles.
  const json roles = j.value("roles", json::object());
  auto active = u.find("defaultRoles");
  if (active != u.end() && active->is_array()) {
    for (const json& r : *active) {
      if (!r.is_string()) continue;
      auto role = roles.find(r.get<std::string>());
      if (role != roles.end() && role->is_object() && !Str(*role, "name").empty()) p.roles.push_back(Str(*role, "name"));
    }
  }
  return p;
}

std::vector<Grant> TritonGrants(const TritonPrincipal& who, const std::vector<std::string>& account_projects) {
  std::vector<Grant> out;
  if (who.disabled) return out;
  if (who.user_login.empty()) {
    for (const std::string& p : account_projects) out.push_back(Grant{Role::kOperator, p});
    return out;
  }
  std::set<std::string> mine(account_projects.begin(), account_projects.end());
  for (const std::string& name : who.roles) {
    if (!absl::StartsWith(name, "mariposa-")) continue;
    std::string rest = name.substr(9);
    std::string project;
    if (size_t dot = rest.find('.'); dot != std::string::npos) {
      project = rest.substr(dot + 1);
      rest = rest.substr(0, dot);
    }
    std::optional<Role> role = ParseRole(rest);
    if (!role || *role == Role::kAdmin || *role == Role::kHealthAgent) continue;
    if (project.empty()) {
      for (const std::string& p : account_projects) out.push_back(Grant{*role, p});
    } else if (mine.count(project)) {
      out.push_back(Grant{*role, project});
    }
  }
  return out;
}

}  // namespace mariposa::auth
