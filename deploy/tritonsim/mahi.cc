#include "deploy/tritonsim/mahi.h"

#include "absl/strings/ascii.h"
#include "auth/http_signature.h"
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {
namespace {

bool Flag(const json& o, const char* key) { return o.contains(key) && o[key].is_boolean() && o[key].get<bool>(); }

std::string Login(const json& o) {
  return o.contains("login") && o["login"].is_string() ? o["login"].get<std::string>() : "";
}

}  // namespace

std::string Mahi::AddKeys(const json& keys, std::map<std::string, std::string>* to) {
  if (keys.is_null()) return "";
  // A list of lines, or mahi's own shape {FINGERPRINT: line}.
  json lines = json::array();
  if (keys.is_object()) {
    for (const auto& [fp, line] : keys.items()) lines.push_back(line);
  } else if (keys.is_array()) {
    lines = keys;
  } else {
    return "keys must be a list of OpenSSH public key lines";
  }
  for (const json& k : lines) {
    if (!k.is_string()) return "keys must be a list of OpenSSH public key lines";
    auto key = mariposa::auth::ParseSshPublicKey(k.get<std::string>());
    if (!key.ok()) return std::string(key.status().message());
    (*to)[key->md5] = std::string(absl::StripAsciiWhitespace(k.get<std::string>()));
  }
  return "";
}

Mahi::Account* Mahi::FindLocked(const std::string& id) {
  auto it = accounts_.find(id);
  if (it != accounts_.end()) return &it->second;
  for (auto& [login, a] : accounts_) {
    if (a.uuid == id) return &a;
  }
  return nullptr;
}

std::string Mahi::AddAccountLocked(const json& body) {
  std::string login = Login(body);
  if (login.empty()) return "an account needs a login";
  Account& a = accounts_[login];
  a.login = login;
  if (a.uuid.empty()) a.uuid = body.value("uuid", new_uuid_());
  if (!IsUuid(a.uuid)) return "account uuid " + a.uuid + " is not a uuid";
  if (body.contains("disabled")) a.disabled = Flag(body, "disabled");
  if (std::string err = AddKeys(body.value("keys", json()), &a.keys); !err.empty()) return err;
  for (const json& u : body.value("users", json::array())) {
    if (std::string err = AddUserLocked(u, &a); !err.empty()) return err;
  }
  return "";
}

std::string Mahi::AddUserLocked(const json& body, Account* a) {
  std::string login = Login(body);
  if (login.empty()) return "a user needs a login";
  User& u = a->users[login];
  u.login = login;
  u.account = a->uuid;
  if (u.uuid.empty()) u.uuid = body.value("uuid", new_uuid_());
  if (!IsUuid(u.uuid)) return "user uuid " + u.uuid + " is not a uuid";
  if (body.contains("disabled")) u.disabled = Flag(body, "disabled");
  if (std::string err = AddKeys(body.value("keys", json()), &u.keys); !err.empty()) return err;
  auto role_uuids = [&](const json& names, std::vector<std::string>* out) -> std::string {
    if (!names.is_array()) return "roles must be a list of role names";
    for (const json& n : names) {
      if (!n.is_string() || n.get<std::string>().empty()) return "roles must be a list of role names";
      std::string& id = a->roles[n.get<std::string>()];
      if (id.empty()) id = new_uuid_();
      if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
    }
    return "";
  };
  if (body.contains("roles")) {
    if (std::string err = role_uuids(body["roles"], &u.roles); !err.empty()) return err;
    if (!body.contains("default_roles")) u.default_roles = u.roles;
  }
  if (body.contains("default_roles")) {
    std::vector<std::string> d;
    if (std::string err = role_uuids(body["default_roles"], &d); !err.empty()) return err;
    for (const std::string& id : d) {
      if (std::find(u.roles.begin(), u.roles.end(), id) == u.roles.end()) u.roles.push_back(id);
    }
    u.default_roles = d;
  }
  return "";
}

std::string Mahi::Load(const json& accounts) {
  if (!accounts.is_array()) return "accounts must be a list";
  absl::MutexLock l(&mu_);
  for (const json& a : accounts) {
    if (!a.is_object()) return "each account is an object";
    if (std::string err = AddAccountLocked(a); !err.empty()) return err;
  }
  return "";
}

json Mahi::AccountJson(const Account& a) {
  json out = {{"type", "account"}, {"uuid", a.uuid}, {"login", a.login}, {"groups", json::array()},
              {"approved_for_provisioning", true}, {"keys", a.keys}, {"isOperator", false}};
  if (a.disabled) out["disabled"] = "true";
  return out;
}

json Mahi::UserJson(const User& u) {
  json out = {{"type", "user"}, {"uuid", u.uuid}, {"account", u.account}, {"login", u.login},
              {"keys", u.keys}, {"roles", u.roles}, {"defaultRoles", u.default_roles}};
  if (u.disabled) out["disabled"] = "true";
  return out;
}

json Mahi::RolesJson(const Account& a, const User* u) {
  json out = json::object();
  if (u == nullptr) return out;
  for (const auto& [name, id] : a.roles) {
    if (std::find(u->roles.begin(), u->roles.end(), id) == u->roles.end()) continue;
    out[id] = {{"type", "role"}, {"uuid", id}, {"name", name}, {"account", a.uuid},
               {"policies", json::array()}, {"rules", json::array()}};
  }
  return out;
}

Reply Mahi::GetAccount(const Params& q) {
  auto it = q.find("login");
  if (it == q.end()) return DataCenter::Error(400, "BadRequest", "login is required");
  absl::MutexLock l(&mu_);
  auto a = accounts_.find(it->second);
  if (a == accounts_.end()) {
    return DataCenter::Error(404, "AccountDoesNotExist", "account " + it->second + " does not exist");
  }
  Reply r;
  r.body = {{"roles", json::object()}, {"account", AccountJson(a->second)}};
  return r;
}

Reply Mahi::GetAccountByUuid(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  for (const auto& [login, a] : accounts_) {
    if (a.uuid != uuid) continue;
    Reply r;
    r.body = {{"roles", json::object()}, {"account", AccountJson(a)}};
    return r;
  }
  return DataCenter::Error(404, "AccountIdDoesNotExist", "account " + uuid + " does not exist");
}

Reply Mahi::GetUser(const Params& q) {
  auto acc = q.find("account"), login = q.find("login"), fb = q.find("fallback");
  if (acc == q.end() || login == q.end()) return DataCenter::Error(400, "BadRequest", "account and login are required");
  bool fallback = fb == q.end() || fb->second != "false";  // mahi: true unless said
  absl::MutexLock l(&mu_);
  auto a = accounts_.find(acc->second);
  if (a == accounts_.end()) {
    return DataCenter::Error(404, "AccountDoesNotExist", "account " + acc->second + " does not exist");
  }
  Reply r;
  auto u = a->second.users.find(login->second);
  if (u == a->second.users.end()) {
    if (!fallback) {
      return DataCenter::Error(404, "UserDoesNotExist",
                               "user " + login->second + " does not exist in account " + acc->second);
    }
    r.body = {{"roles", json::object()}, {"account", AccountJson(a->second)}};
    return r;
  }
  r.body = {{"roles", RolesJson(a->second, &u->second)}, {"account", AccountJson(a->second)},
            {"user", UserJson(u->second)}};
  return r;
}

Reply Mahi::GetUserByUuid(const std::string& uuid) {
  absl::MutexLock l(&mu_);
  for (const auto& [login, a] : accounts_) {
    for (const auto& [ulogin, u] : a.users) {
      if (u.uuid != uuid) continue;
      Reply r;
      r.body = {{"roles", RolesJson(a, &u)}, {"account", AccountJson(a)}, {"user", UserJson(u)}};
      return r;
    }
  }
  return DataCenter::Error(404, "UserIdDoesNotExist", "user " + uuid + " does not exist");
}

Reply Mahi::AddAccount(const json& body) {
  if (!body.is_object()) return DataCenter::Error(400, "InvalidContent", "body: {\"login\": …, \"keys\": […]}");
  absl::MutexLock l(&mu_);
  if (std::string err = AddAccountLocked(body); !err.empty()) return DataCenter::Error(422, "InvalidArgument", err);
  Reply r;
  r.body = AccountJson(accounts_[Login(body)]);
  return r;
}

Reply Mahi::AddUser(const json& body) {
  if (!body.is_object() || !body.contains("account") || !body["account"].is_string()) {
    return DataCenter::Error(400, "InvalidContent", "body: {\"account\": LOGIN, \"login\": …, \"keys\": […], \"roles\": […]}");
  }
  absl::MutexLock l(&mu_);
  Account* a = FindLocked(body["account"].get<std::string>());
  if (a == nullptr) return DataCenter::Error(404, "AccountDoesNotExist", "no account " + body["account"].get<std::string>());
  if (std::string err = AddUserLocked(body, a); !err.empty()) return DataCenter::Error(422, "InvalidArgument", err);
  Reply r;
  r.body = {{"roles", RolesJson(*a, &a->users[Login(body)])}, {"user", UserJson(a->users[Login(body)])}};
  return r;
}

Reply Mahi::DeleteKey(const json& body) {
  if (!body.is_object() || !body.contains("account") || !body.contains("fingerprint")) {
    return DataCenter::Error(400, "InvalidContent", "body: {\"account\": LOGIN, \"user\"?: LOGIN, \"fingerprint\": FP}");
  }
  absl::MutexLock l(&mu_);
  Account* a = FindLocked(body.value("account", ""));
  if (a == nullptr) return DataCenter::Error(404, "AccountDoesNotExist", "no account " + body.value("account", ""));
  std::map<std::string, std::string>* keys = &a->keys;
  if (!body.value("user", "").empty()) {
    auto u = a->users.find(body.value("user", ""));
    if (u == a->users.end()) return DataCenter::Error(404, "UserDoesNotExist", "no user " + body.value("user", ""));
    keys = &u->second.keys;
  }
  std::string fp = body.value("fingerprint", "");
  for (auto it = keys->begin(); it != keys->end(); ++it) {
    auto k = mariposa::auth::ParseSshPublicKey(it->second);
    if (k.ok() && mariposa::auth::FingerprintMatches(*k, fp)) {
      keys->erase(it);
      Reply r;
      r.body = {{"deleted", fp}};
      return r;
    }
  }
  return DataCenter::Error(404, "ResourceNotFound", "no key " + fp);
}

Reply Mahi::List() {
  absl::MutexLock l(&mu_);
  json out = json::array();
  for (const auto& [login, a] : accounts_) {
    json j = AccountJson(a);
    json users = json::array();
    for (const auto& [ul, u] : a.users) {
      json uj = UserJson(u);
      json names = json::array();
      for (const auto& [name, id] : a.roles) {
        if (std::find(u.roles.begin(), u.roles.end(), id) != u.roles.end()) names.push_back(name);
      }
      uj["role_names"] = names;
      users.push_back(uj);
    }
    j["users"] = users;
    out.push_back(j);
  }
  Reply r;
  r.body = out;
  return r;
}

}  // namespace tritonsim
