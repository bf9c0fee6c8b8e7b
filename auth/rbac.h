// Role-based access control: the roles, and the table that says which role
// every RPC needs, read from the (access) option each RPC carries in its
// .proto (proto/mariposa/v1/access.proto; docs/security.md prints the same
// table). Pure; no I/O.
#ifndef MARIPOSA_AUTH_RBAC_H_
#define MARIPOSA_AUTH_RBAC_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mariposa::auth {

// viewer < deployer < operator < admin; health-agent stands apart (it may
// only connect as a health agent).
enum class Role { kViewer, kDeployer, kOperator, kAdmin, kHealthAgent };

// What an RPC needs. kAnyone: any caller, even one without a role (whoami,
// ping, can-i).
enum class Permission { kAnyone, kRead, kDeploy, kOperate, kAdmin, kHealthAgent };

std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view name);
std::string_view PermissionName(Permission p);  // the least role: "viewer", …
bool RoleAllows(Role role, Permission p);

// One role, on one project or ("" ) on every project.
struct Grant {
  Role role;
  std::string project;
  bool operator==(const Grant& o) const { return role == o.role && project == o.project; }
};

struct MethodRule {
  // "Projects/Apply" (service/method of mariposa.v1) or, where the request
  // decides, "Queue/AddTask#start".
  std::string method;
  Permission permission;
  // Global: not about one project (backups, tokens, imports); only a grant
  // on every project satisfies it.
  bool global;
  // Changes the store or the data center; refused while mariposad is
  // readonly (docs/operations.md, "The controller's states").
  bool writes;
};

// The services mariposad serves ("mariposa.v1.Projects", …).
const std::vector<std::string>& ServedServices();
// "viewer" -> kRead, "anyone" -> kAnyone, …; nullopt for anything else.
std::optional<Permission> ParsePermission(std::string_view role);

// Every RPC mariposad serves, with its variants, in the protos' order. A
// method missing here (no rule, or a role nobody has) is denied to everyone.
const std::vector<MethodRule>& MethodRules();
const MethodRule* RuleFor(std::string_view method);

// Whether `grants` allow `rule` on `project`. `project` empty for a call not
// about one project: a project-scoped rule then needs the role on at least
// one project (the answer lists only what the grants cover), a global one on
// every project.
bool Allowed(const std::vector<Grant>& grants, const MethodRule& rule, std::string_view project);

// Whether `grants` let their holder see `project` at all (viewer or more).
bool CanSee(const std::vector<Grant>& grants, std::string_view project);

// The RPC a CLI verb needs ("apply" -> "Projects/Apply"); nullopt if unknown.
std::optional<std::string> MethodForVerb(std::string_view verb);

// "mariposa.v1.Projects/Apply" or "/mariposa.v1.Projects/Apply" ->
// "Projects/Apply"; anything else unchanged.
std::string ShortMethod(std::string_view full);

}  // namespace mariposa::auth

#endif  // MARIPOSA_AUTH_RBAC_H_
