#include "auth/rbac.h"

#include <algorithm>

namespace mariposa::auth {

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kViewer: return "viewer";
    case Role::kDeployer: return "deployer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
    case Role::kHealthAgent: return "health-agent";
  }
  return "?";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kViewer, Role::kDeployer, Role::kOperator, Role::kAdmin, Role::kHealthAgent}) {
    if (RoleName(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view PermissionName(Permission p) {
  switch (p) {
    case Permission::kAnyone: return "anyone";
    case Permission::kRead: return "viewer";
    case Permission::kDeploy: return "deployer";
    case Permission::kOperate: return "operator";
    case Permission::kAdmin: return "admin";
    case Permission::kHealthAgent: return "health-agent";
  }
  return "?";
}

namespace {
int Rank(Role r) {
  switch (r) {
    case Role::kViewer: return 1;
    case Role::kDeployer: return 2;
    case Role::kOperator: return 3;
    case Role::kAdmin: return 4;
    case Role::kHealthAgent: return 0;
  }
  return 0;
}
int Rank(Permission p) {
  switch (p) {
    case Permission::kAnyone: return 0;
    case Permission::kRead: return 1;
    case Permission::kDeploy: return 2;
    case Permission::kOperate: return 3;
    case Permission::kAdmin: return 4;
    case Permission::kHealthAgent: return 0;
  }
  return 5;
}
}  // namespace

bool RoleAllows(Role role, Permission p) {
  if (p == Permission::kAnyone) return true;
  if (p == Permission::kHealthAgent) return role == Role::kHealthAgent || role == Role::kAdmin;
  if (role == Role::kHealthAgent) return false;
  return Rank(role) >= Rank(p);
}

const std::vector<MethodRule>& MethodRules() {
  using P = Permission;
  static const auto* rules = new std::vector<MethodRule>{
      // Projects, versions, metadata.
      {"Projects/CreateProject", P::kDeploy, false, true},
      // A project for another Triton account (--owner).
      {"Projects/CreateProject#owner", P::kAdmin, false, true},
      {"Projects/ListProjects", P::kRead, false, false},
      {"Projects/GetProject", P::kRead, false, false},
      {"Projects/DeleteProject", P::kOperate, false, true},
      {"Projects/Apply", P::kDeploy, false, true},
      // A manifest with Triton core services (compute_type core or agent).
      {"Projects/Apply#core", P::kAdmin, false, true},
      // Dry runs (diff, --dry-run) only read: the plan of a change.
      {"Projects/Apply#dry-run", P::kRead, false, false},
      {"Projects/ListVersions", P::kRead, false, false},
      {"Projects/GetVersion", P::kRead, false, false},
      {"Projects/TagVersion", P::kDeploy, false, true},
      {"Projects/Rollback", P::kDeploy, false, true},
      {"Projects/Rollback#core", P::kAdmin, false, true},
      {"Projects/Rollback#dry-run", P::kRead, false, false},
      {"Projects/Scale", P::kDeploy, false, true},
      {"Projects/Scale#core", P::kAdmin, false, true},
      {"Projects/Scale#dry-run", P::kRead, false, false},
      {"Projects/ListMeta", P::kRead, false, false},
      {"Projects/GetMeta", P::kRead, false, false},
      {"Projects/SetMeta", P::kDeploy, false, true},
      {"Projects/DeleteMeta", P::kDeploy, false, true},
      {"Projects/IncrMeta", P::kDeploy, false, true},
      {"Projects/ImportMeta", P::kDeploy, false, true},
      {"Projects/ListEvents", P::kRead, false, false},
      {"Events/Watch", P::kRead, false, false},
      // Tasks and freezes.
      {"Queue/ListTasks", P::kRead, false, false},
      {"Queue/GetTask", P::kRead, false, false},
      {"Queue/AddTask", P::kDeploy, false, true},  // reprovision
      {"Queue/AddTask#start", P::kOperate, false, true},
      {"Queue/AddTask#stop", P::kOperate, false, true},
      {"Queue/TerminateTask", P::kOperate, false, true},
      {"Queue/PauseTask", P::kOperate, false, true},
      {"Queue/ResumeTask", P::kOperate, false, true},
      {"Queue/Freeze", P::kOperate, false, true},
      {"Queue/Thaw", P::kOperate, false, true},
      // State and health.
      {"State/GetState", P::kRead, false, false},
      {"State/GetHealth", P::kRead, false, false},
      // Images: reading is any viewer's; changing IMGAPI is the data center's.
      {"Images/List", P::kRead, false, false},
      {"Images/Get", P::kRead, false, false},
      {"Images/Avail", P::kRead, false, false},
      {"Images/Changes", P::kRead, false, false},
      {"Images/Import", P::kAdmin, true, true},
      {"Images/Create", P::kAdmin, true, true},
      // The controller.
      {"Admin/Status", P::kRead, false, false},
      {"Admin/Ping", P::kAnyone, false, false},
      {"Admin/Nodes", P::kRead, false, false},
      {"Admin/Backup", P::kAdmin, true, false},
      // Readonly and back: allowed in readonly mode, or it could not end.
      {"Admin/SetState", P::kAdmin, true, false},
      // Identity, tokens, grants, keys.
      {"Auth/WhoAmI", P::kAnyone, false, false},
      {"Auth/CanI", P::kAnyone, false, false},
      {"Auth/Permissions", P::kAnyone, false, false},
      {"Auth/CreateToken", P::kAdmin, true, true},
      {"Auth/ListTokens", P::kAdmin, true, false},
      {"Auth/RevokeToken", P::kAdmin, true, true},
      {"Auth/SetGrant", P::kAdmin, true, true},
      {"Auth/ListGrants", P::kAdmin, true, false},
      {"Auth/DeleteGrant", P::kAdmin, true, true},
      {"Auth/RotateKey", P::kAdmin, true, true},
      // Health agents.
      {"HealthAgents/Connect", P::kHealthAgent, true, false},
  };
  return *rules;
}

const MethodRule* RuleFor(std::string_view method) {
  for (const MethodRule& r : MethodRules()) {
    if (method == r.method) return &r;
  }
  return nullptr;
}

bool Allowed(const std::vector<Grant>& grants, const MethodRule& rule, std::string_view project) {
  if (rule.permission == Permission::kAnyone) return true;  // even without a role: whoami, ping
  for (const Grant& g : grants) {
    if (!RoleAllows(g.role, rule.permission)) continue;
    if (g.project.empty()) return true;  // every project
    if (rule.global) continue;
    if (project.empty() || g.project == project) return true;
  }
  return false;
}

bool CanSee(const std::vector<Grant>& grants, std::string_view project) {
  return std::any_of(grants.begin(), grants.end(), [&](const Grant& g) {
    return g.role != Role::kHealthAgent && (g.project.empty() || g.project == project);
  });
}

std::optional<std::string> MethodForVerb(std::string_view verb) {
  static const std::pair<const char*, const char*> kVerbs[] = {
      {"apply", "Projects/Apply"},         {"diff", "Projects/Apply#dry-run"},
      {"rollback", "Projects/Rollback"},   {"scale", "Projects/Scale"},
      {"create", "Projects/CreateProject"}, {"delete", "Projects/DeleteProject"},
      {"get", "Projects/GetProject"},      {"list", "Projects/ListProjects"},
      {"status", "State/GetState"},        {"health", "State/GetHealth"},
      {"events", "Projects/ListEvents"},   {"versions", "Projects/ListVersions"},
      {"history", "Projects/ListVersions"}, {"tag", "Projects/TagVersion"},
      {"meta-get", "Projects/GetMeta"},    {"meta-set", "Projects/SetMeta"},
      {"reprovision", "Queue/AddTask"},    {"start", "Queue/AddTask#start"},
      {"stop", "Queue/AddTask#stop"},      {"terminate", "Queue/TerminateTask"},
      {"pause", "Queue/PauseTask"},        {"resume", "Queue/ResumeTask"},
      {"freeze", "Queue/Freeze"},          {"thaw", "Queue/Thaw"},
      {"backup", "Admin/Backup"},          {"token", "Auth/CreateToken"},
      {"grant", "Auth/SetGrant"},          {"rotate-key", "Auth/RotateKey"},
      {"image-import", "Images/Import"},   {"image-create", "Images/Create"},
  };
  for (const auto& [v, m] : kVerbs) {
    if (verb == v) return std::string(m);
  }
  if (RuleFor(verb) != nullptr) return std::string(verb);
  return std::nullopt;
}

std::string ShortMethod(std::string_view full) {
  std::string_view s = full;
  if (!s.empty() && s[0] == '/') s.remove_prefix(1);
  constexpr std::string_view kPkg = "mariposa.v1.";
  if (s.substr(0, kPkg.size()) == kPkg) s.remove_prefix(kPkg.size());
  return std::string(s);
}

}  // namespace mariposa::auth
