// mahi, Triton's auth cache: accounts, their sub-users, SSH keys and RBAC
// roles, served as mahi serves them (GetAccount `GET /accounts?login=`,
// GetAccountByUuid `GET /accounts/:uuid`, GetUser `GET
// /users?account=&login=[&fallback=]`, GetUserByUuid `GET /users/:uuid`;
// mahi's docs/index.md), so that mariposad checks HTTP Signature callers
// the way CloudAPI does. Filled from the seed's "accounts" and the control
// API (`tritonsim ctl account-add`, `user-add`, `key-delete`, `accounts`).
#ifndef MARIPOSA_DEPLOY_TRITONSIM_MAHI_H_
#define MARIPOSA_DEPLOY_TRITONSIM_MAHI_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "deploy/tritonsim/datacenter.h"

namespace tritonsim {

class Mahi {
 public:
  explicit Mahi(std::function<std::string()> new_uuid) : new_uuid_(std::move(new_uuid)) {}

  // The seed's "accounts": [{"login", "uuid"?, "keys": [OPENSSH…],
  // "disabled"?, "users": [{"login", "uuid"?, "keys", "roles": [NAME…],
  // "default_roles"? (default: all of its roles), "disabled"?}]}]. "" or
  // what is wrong.
  std::string Load(const json& accounts);

  Reply GetAccount(const Params& q);
  Reply GetAccountByUuid(const std::string& uuid);
  Reply GetUser(const Params& q);
  Reply GetUserByUuid(const std::string& uuid);

  // Control API: an account (made, or its keys added to), a sub-user (the
  // same; roles by name, made in its account when new), a key removed
  // ({"account", "user"?, "fingerprint"}), every account (JSON).
  Reply AddAccount(const json& body);
  Reply AddUser(const json& body);
  Reply DeleteKey(const json& body);
  Reply List();

 private:
  struct User {
    std::string uuid, login, account;
    std::map<std::string, std::string> keys;  // MD5 fingerprint -> OpenSSH line
    std::vector<std::string> roles, default_roles;  // role uuids
    bool disabled = false;
  };
  struct Account {
    std::string uuid, login;
    std::map<std::string, std::string> keys;
    bool disabled = false;
    std::map<std::string, User> users;  // by login
    std::map<std::string, std::string> roles;  // name -> uuid
  };
  // Adds each key of `keys` (a list of OpenSSH lines) to `to`; "" or why not.
  static std::string AddKeys(const json& keys, std::map<std::string, std::string>* to);
  std::string AddAccountLocked(const json& body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string AddUserLocked(const json& body, Account* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static json AccountJson(const Account& a);
  static json UserJson(const User& u);
  static json RolesJson(const Account& a, const User* u);
  Account* FindLocked(const std::string& login_or_uuid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::function<std::string()> new_uuid_;
  mutable absl::Mutex mu_;
  std::map<std::string, Account> accounts_ ABSL_GUARDED_BY(mu_);  // by login
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_MAHI_H_
