#include "auth/rbac.h"

#include <algorithm>

#include <google/protobuf/descriptor.h>

#include "mariposa/v1/access.pb.h"

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

const std::vector<std::string>& ServedServices() {
  static const auto* kServed = new std::vector<std::string>{
      "mariposa.v1.Projects", "mariposa.v1.Events", "mariposa.v1.Queue", "mariposa.v1.State",
      "mariposa.v1.Images",   "mariposa.v1.Admin",  "mariposa.v1.Auth",  "mariposa.v1.HealthAgents"};
  return *kServed;
}

std::optional<Permission> ParsePermission(std::string_view role) {
  for (Permission p : {Permission::kAnyone, Permission::kRead, Permission::kDeploy, Permission::kOperate, Permission::kAdmin,
                       Permission::kHealthAgent}) {
    if (PermissionName(p) == role) return p;
  }
  return std::nullopt;
}

const std::vector<MethodRule>& MethodRules() {
  static const auto* rules = [] {
    auto* out = new std::vector<MethodRule>;
    const auto* pool = google::protobuf::DescriptorPool::generated_pool();
    for (const std::string& name : ServedServices()) {
      const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(name);
      if (s == nullptr) continue;  // rbac_test names it
      for (int i = 0; i < s->method_count(); ++i) {
        const google::protobuf::MethodDescriptor* m = s->method(i);
        // A method without a rule, or with a role nobody has, stays out of
        // the table: denied to everyone (rbac_test names it).
        if (!m->options().HasExtension(v1::access)) continue;
        const v1::AccessRule& a = m->options().GetExtension(v1::access);
        std::string method = s->name() + "/" + m->name();
        if (auto p = ParsePermission(a.role())) out->push_back({method, *p, a.global(), a.writes()});
        for (const v1::AccessVariant& v : a.variants()) {
          if (auto p = ParsePermission(v.role())) out->push_back({method + "#" + v.name(), *p, v.global(), v.writes()});
        }
      }
    }
    return out;
  }();
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
      {"copy", "Projects/CopyProject"},    {"copy-from", "Projects/CopyProject#source"},
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
