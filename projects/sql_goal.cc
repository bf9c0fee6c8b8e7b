// SqlProjectStore: the goal (goal_store.h): projects, versions, meta and
// secrets, on SQLite and PostgreSQL.
#include "projects/sql_store.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <regex>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "projects/limits.h"
#include "projects/sql_store_internal.h"

namespace mariposa {

using sql_internal::FromMicros;
using sql_internal::LastOfEach;

namespace {

std::string Redact(const std::string& value, bool secret) { return secret ? "<secret>" : value; }

constexpr const char* kVersionCols =
    "uuid, project_uuid, number, hash, author, created_at, origin, rolled_back_to, message, warnings, "
    "(SELECT COUNT(*) FROM services s WHERE s.version_uuid = versions.uuid)";

// kVersionCols from column `at` on.
VersionRecord ReadVersion(const Statement& st, int at = 0) {
  VersionRecord v;
  v.uuid = st.Text(at);
  v.project_uuid = st.Text(at + 1);
  v.number = st.Int(at + 2);
  v.hash = st.Text(at + 3);
  v.author = st.Text(at + 4);
  v.created_at = FromMicros(st.Int(at + 5));
  v.origin = st.Text(at + 6);
  v.rolled_back_to = st.Int(at + 7);
  v.message = st.Text(at + 8);
  std::string w = st.Text(at + 9);
  if (!w.empty()) v.warnings = absl::StrSplit(w, '\n');
  v.service_count = static_cast<int>(st.Int(at + 10));
  return v;
}

// A version's tags as the query's aggregate gave them (tags are DNS labels:
// no commas), sorted.
std::vector<std::string> SplitTags(const std::string& joined) {
  std::vector<std::string> tags;
  for (absl::string_view tag : absl::StrSplit(joined, ',', absl::SkipEmpty())) tags.emplace_back(tag);
  std::sort(tags.begin(), tags.end());
  return tags;
}

}  // namespace

void SqlProjectStore::SetSecretCodec(const SecretCodec* codec) {
  absl::MutexLock l(&mu_);
  codec_.store(codec);
}

absl::StatusOr<int> SqlProjectStore::ResealSecrets() {
  absl::MutexLock l(&mu_);
  const SecretCodec* codec = codec_.load();
  if (codec == nullptr) return absl::FailedPreconditionError("no key to seal secrets with");
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  std::vector<std::tuple<std::string, std::string, std::string>> rows;  // project, key, stored value
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT project_uuid, key, value FROM meta WHERE secret = 1"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      rows.emplace_back(st.Text(0), st.Text(1), st.Text(2));
    }
  }
  int changed = 0;
  for (const auto& [project, key, stored] : rows) {
    if (codec->SealedWithCurrentKey(stored)) continue;
    std::string place = absl::StrCat(project, "/", key);
    std::string plain = stored;  // a store from before sealing holds plain text
    if (absl::StartsWith(stored, "sealed:")) {
      auto opened = codec->Unseal(stored, place);
      if (!opened.ok()) return Annotate(opened.status(), absl::StrCat("meta key \"", key, "\""));
      plain = *std::move(opened);
    }
    ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE meta SET value = ? WHERE project_uuid = ? AND key = ?"));
    up.Bind(1, codec->Seal(plain, place)).Bind(2, project).Bind(3, key);
    RETURN_IF_ERROR(up.Run());
    ++changed;
  }
  RETURN_IF_ERROR(txn->Commit());
  return changed;
}

absl::StatusOr<ProjectRecord> SqlProjectStore::GetProjectOn(Database* db, const std::string& name_or_uuid,
                                                             std::optional<VersionRecord>* current) {
  // The one aggregate the two dialects spell differently.
  const char* concat = db->postgres() ? "string_agg" : "group_concat";
  std::string sql = absl::StrCat(
      "SELECT p.uuid, p.name, p.description, p.created_at, COALESCE(p.current_version, ''), "
      "COALESCE(v.number, 0), "
      "(SELECT COUNT(*) FROM services s WHERE s.version_uuid = p.current_version), "
      "p.deleting, (SELECT ", concat, "(service, ',') FROM stopped_services x "
      "WHERE x.project_uuid = p.uuid), p.owner");
  if (current != nullptr) {
    // The current version too: kVersionCols of v (its service count is
    // the project's, column 6), then its tags.
    absl::StrAppend(&sql, ", v.uuid, v.project_uuid, v.number, v.hash, v.author, v.created_at, v.origin, "
                          "v.rolled_back_to, v.message, v.warnings, 0, (SELECT ",
                    concat, "(tag, ',') FROM version_tags t WHERE t.version_uuid = v.uuid)");
  }
  absl::StrAppend(&sql, " FROM projects p LEFT JOIN versions v ON v.uuid = p.current_version "
                        "WHERE p.name = ?1 OR p.uuid = ?1");
  ASSIGN_OR_RETURN(auto st, db->Prepare(sql));
  st.Bind(1, name_or_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no project \"", name_or_uuid,
                                            "\"; `mariposa project list` shows the projects"));
  }
  ProjectRecord p;
  p.uuid = st.Text(0);
  p.name = st.Text(1);
  p.description = st.Text(2);
  p.created_at = FromMicros(st.Int(3));
  p.current_version = st.Text(4);
  p.current_number = st.Int(5);
  p.service_count = static_cast<int>(st.Int(6));
  p.deleting = st.Int(7) != 0;
  p.delete_volumes = st.Int(7) == 2;
  for (absl::string_view svc : absl::StrSplit(st.Text(8), ',', absl::SkipEmpty())) p.stopped.insert(std::string(svc));
  p.owner = st.Text(9);
  if (current != nullptr) {
    current->reset();
    if (!p.current_version.empty()) {
      *current = ReadVersion(st, 10);
      (*current)->service_count = p.service_count;
      (*current)->tags = SplitTags(st.Text(21));
    }
  }
  return p;
}

absl::StatusOr<std::string> SqlProjectStore::InsertProjectLocked(const std::string& name,
                                                                   const std::string& description,
                                                                   const std::string& owner, const std::string& actor) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO projects (uuid, name, description, created_at, owner) VALUES (?, ?, ?, ?, ?)"));
  std::string uuid = NewUuid();
  st.Bind(1, uuid).Bind(2, name).Bind(3, description).Bind(4, NowMicros()).Bind(5, owner);
  RETURN_IF_ERROR(st.Run());
  std::string detail = owner.empty() ? description : absl::StrCat(description, description.empty() ? "" : "; ",
                                                                  "account ", owner);
  RETURN_IF_ERROR(AppendEventLocked(actor, name, "project.create", uuid, detail).status());
  return uuid;
}

absl::StatusOr<int> SqlProjectStore::ClaimUnownedProjects(const std::string& owner) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid, name FROM projects WHERE owner = '' ORDER BY name"));
  std::vector<std::pair<std::string, std::string>> unowned;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    unowned.emplace_back(st.Text(0), st.Text(1));
  }
  for (const auto& [uuid, name] : unowned) {
    ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE projects SET owner = ? WHERE uuid = ?"));
    up.Bind(1, owner).Bind(2, uuid);
    RETURN_IF_ERROR(up.Run());
    RETURN_IF_ERROR(AppendEventLocked("mariposad", name, "project.owner", uuid,
                                      absl::StrCat("account ", owner, " (mariposad's --owner) recorded as its owner"))
                        .status());
  }
  RETURN_IF_ERROR(txn->Commit());
  return static_cast<int>(unowned.size());
}

absl::StatusOr<ProjectRecord> SqlProjectStore::CreateProject(const std::string& name,
                                                                const std::string& description,
                                                                const std::string& actor,
                                                                const std::string& owner) {
  if (!IsDnsLabel(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "project name \"", name, "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
  }
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  if (GetProjectLocked(name).ok()) return absl::AlreadyExistsError(absl::StrCat("project \"", name, "\" exists already"));
  ASSIGN_OR_RETURN(std::string uuid, InsertProjectLocked(name, description, owner, actor));
  RETURN_IF_ERROR(txn->Commit());
  return GetProjectLocked(uuid);
}

absl::StatusOr<std::vector<ProjectRecord>> SqlProjectStore::ListProjects() {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid FROM projects ORDER BY name"));
  std::vector<std::string> uuids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    uuids.push_back(st.Text(0));
  }
  std::vector<ProjectRecord> out;
  for (const auto& u : uuids) {
    ASSIGN_OR_RETURN(auto p, GetProjectLocked(u));
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<ProjectRecord> SqlProjectStore::GetProject(const std::string& name_or_uuid) {
  return Read([&](Database* db) { return GetProjectOn(db, name_or_uuid); });
}

absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> SqlProjectStore::GetProjectWithCurrent(
    const std::string& name_or_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> {
    std::optional<VersionRecord> current;
    ASSIGN_OR_RETURN(ProjectRecord p, GetProjectOn(db, name_or_uuid, &current));
    return std::make_pair(std::move(p), std::move(current));
  });
}

absl::Status SqlProjectStore::DeleteProject(const std::string& name_or_uuid, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(name_or_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(name_or_uuid));
  // projects.current_version is not a foreign key (it would be circular);
  // clear it, then let ON DELETE CASCADE remove versions, services, meta, tags.
  ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM projects WHERE uuid = ?"));
  st.Bind(1, p.uuid);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "project.delete", p.uuid,
                                    absl::StrCat("had ", p.current_number, " versions"))
                      .status());
  RETURN_IF_ERROR(txn->Commit());
  // ON DELETE CASCADE removed its jobs.
  absl::MutexLock j(&jobs_mu_);
  DropJobsLocked(p.uuid);
  return absl::OkStatus();
}

absl::StatusOr<CommitResult> SqlProjectStore::CommitVersion(const NewVersion& v) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(v.project_name));
  CommitResult result;
  auto project = GetProjectLocked(v.project_name);
  if (!project.ok() && absl::IsNotFound(project.status()) && v.create_project && postgres_) {
    // A new project is made under the store's lock: two first applies of
    // one name on two nodes take turns, and the second finds it made.
    txn.reset();
    ASSIGN_OR_RETURN(txn, BeginLocked(WriteScope::kStore));
    project = GetProjectLocked(v.project_name);
  }
  if (!project.ok()) {
    if (!absl::IsNotFound(project.status()) || !v.create_project) return project.status();
    if (!IsDnsLabel(v.project_name)) return absl::InvalidArgumentError("project name is not a DNS label");
    ASSIGN_OR_RETURN(std::string uuid, InsertProjectLocked(v.project_name, v.description, v.owner, v.author));
    result.project_created = true;
    project = GetProjectLocked(uuid);
    if (!project.ok()) return project.status();
  }
  const ProjectRecord& p = *project;
  result.previous_version = p.current_version;
  if (!v.force && v.expected_current != p.current_version) {
    if (p.current_version.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "project ", p.name, " has no version yet, but the apply was based on version ", v.expected_current,
          "; re-run without --previous"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "project ", p.name, " changed since ",
        v.expected_current.empty() ? "you looked (no --previous given)" : absl::StrCat("version ", v.expected_current),
        ": the current version is ", p.current_number, " (", p.current_version,
        "); review `mariposa diff`, then re-run with --previous ", p.current_version, " or --force"));
  }
  if (!p.current_version.empty()) {
    ASSIGN_OR_RETURN(VersionRecord cur, GetVersionLocked(p.uuid, p.current_version, false));
    if (cur.hash == v.hash) {
      result.version = cur;
      result.changed = false;
      RETURN_IF_ERROR(txn->Commit());  // may have created nothing; commits the (empty) txn
      return result;
    }
  }
  std::string uuid = v.uuid.empty() ? NewUuid() : v.uuid;
  // The current version is always the newest: numbers only grow.
  int64_t number = p.current_number + 1;
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                  "INSERT INTO versions (uuid, project_uuid, number, hash, author, created_at, origin, "
                                  "rolled_back_to, message, warnings, manifest, canonical) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    st.Bind(1, uuid).Bind(2, p.uuid).Bind(3, number).Bind(4, v.hash).Bind(5, v.author).Bind(6, NowMicros());
    st.Bind(7, v.origin).Bind(8, v.rolled_back_to).Bind(9, v.message).Bind(10, absl::StrJoin(v.warnings, "\n"));
    st.Bind(11, v.manifest).Bind(12, v.canonical);
    RETURN_IF_ERROR(st.Run());
  }
  {
    // In multi-row statements: on PostgreSQL each is a round trip.
    RETURN_IF_ERROR(InsertRows(db_.get(), "services",
                               {"version_uuid", "name", "service_type", "compute_type", "brand", "image", "package",
                                "count", "spec_hash", "spec_json", "grp"},
                               v.services.size(), [&](Statement& st, size_t row, int f) {
                                 const ServiceRecord& s = v.services[row];
                                 st.Bind(f, uuid).Bind(f + 1, s.name).Bind(f + 2, s.service_type);
                                 st.Bind(f + 3, s.compute_type).Bind(f + 4, s.brand).Bind(f + 5, s.image);
                                 st.Bind(f + 6, s.package).Bind(f + 7, s.count).Bind(f + 8, s.spec_hash);
                                 st.Bind(f + 9, s.spec_json).Bind(f + 10, s.group);
                               }));
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO deployment_groups (version_uuid, name, services) VALUES (?, ?, ?)"));
    for (const GroupRecord& g : v.groups) {
      st.Bind(1, uuid).Bind(2, g.name).Bind(3, absl::StrJoin(g.services, ","));
      RETURN_IF_ERROR(st.Run());
      RETURN_IF_ERROR(st.Reset());
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE projects SET current_version = ?, description = ? WHERE uuid = ?"));
    st.Bind(1, uuid).Bind(2, v.description).Bind(3, p.uuid);
    RETURN_IF_ERROR(st.Run());
  }
  std::string detail = v.origin == "rollback"
                           ? absl::StrCat("version ", number, " restores version ", v.rolled_back_to, " (", v.hash.substr(0, 12), ")")
                           : absl::StrCat("version ", number, " (", v.hash.substr(0, 12), "), ", v.services.size(), " services");
  RETURN_IF_ERROR(AppendEventLocked(v.author, p.name, absl::StrCat("version.", v.origin), uuid, detail).status());
  RETURN_IF_ERROR(txn->Commit());
  ASSIGN_OR_RETURN(result.version, GetVersionLocked(p.uuid, uuid, false));
  result.changed = true;
  return result;
}

absl::StatusOr<std::vector<std::string>> SqlProjectStore::TagsOn(Database* db, const std::string& version_uuid) {
  ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT tag FROM version_tags WHERE version_uuid = ? ORDER BY tag"));
  st.Bind(1, version_uuid);
  std::vector<std::string> tags;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    tags.push_back(st.Text(0));
  }
  return tags;
}

absl::StatusOr<std::vector<VersionRecord>> SqlProjectStore::ListVersions(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(absl::StrCat("SELECT ", kVersionCols,
                                                      " FROM versions WHERE project_uuid = ? ORDER BY number")));
  st.Bind(1, project_uuid);
  std::vector<VersionRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadVersion(st));
  }
  for (auto& v : out) {
    ASSIGN_OR_RETURN(v.tags, TagsLocked(v.uuid));
  }
  return out;
}

absl::StatusOr<VersionRecord> SqlProjectStore::GetVersionOn(Database* db, const std::string& project_uuid,
                                                               const std::string& ref, bool include_text) {
  std::string where;
  std::string arg = ref;
  int64_t number;
  if (ref == "current" || ref == "latest") {
    where = "uuid = (SELECT current_version FROM projects WHERE uuid = ?1)";
    arg = project_uuid;
  } else if (absl::SimpleAtoi(ref, &number) && ref.size() < 8) {
    where = "number = ?1";
  } else if (IsUuid(ref)) {
    where = "uuid = ?1";
    arg = absl::AsciiStrToLower(ref);
  } else {
    // A tag, else a uuid prefix.
    ASSIGN_OR_RETURN(auto tag, db->Prepare("SELECT version_uuid FROM version_tags WHERE project_uuid = ? AND tag = ?"));
    tag.Bind(1, project_uuid).Bind(2, ref);
    ASSIGN_OR_RETURN(bool row, tag.Step());
    if (row) {
      where = "uuid = ?1";
      arg = tag.Text(0);
    } else {
      bool hex = ref.size() >= 4;
      for (char c : ref) hex = hex && (absl::ascii_isxdigit(c) || c == '-');
      if (!hex) {
        return absl::NotFoundError(absl::StrCat("no version \"", ref,
                                                "\": give a version number, a tag, or 4+ characters of its uuid"));
      }
      where = "uuid LIKE ?1 || '%'";
      arg = absl::AsciiStrToLower(ref);
    }
  }
  // Its tags in the same query (tags are DNS labels: no commas).
  ASSIGN_OR_RETURN(auto st, db->Prepare(absl::StrCat(
                                "SELECT ", kVersionCols, ", manifest, canonical, (SELECT ",
                                db->postgres() ? "string_agg" : "group_concat",
                                "(tag, ',') FROM version_tags t WHERE t.version_uuid = versions.uuid) "
                                "FROM versions WHERE project_uuid = ?2 AND ",
                                where, " LIMIT 2")));
  st.Bind(1, arg).Bind(2, project_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no version \"", ref, "\" in this project; `mariposa versions` lists them"));
  }
  VersionRecord v = ReadVersion(st);
  if (include_text) {
    v.manifest = st.Text(11);
    v.canonical = st.Text(12);
  }
  v.tags = SplitTags(st.Text(13));
  ASSIGN_OR_RETURN(bool second, st.Step());
  if (second) {
    return absl::InvalidArgumentError(absl::StrCat("version prefix \"", ref, "\" is ambiguous; give more characters"));
  }
  return v;
}

absl::StatusOr<VersionRecord> SqlProjectStore::GetVersion(const std::string& project_uuid, const std::string& ref,
                                                             bool include_text) {
  return Read([&](Database* db) { return GetVersionOn(db, project_uuid, ref, include_text); });
}

absl::StatusOr<std::vector<ServiceRecord>> SqlProjectStore::ListServices(const std::string& version_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "SELECT name, service_type, compute_type, brand, image, package, count, spec_hash, "
                                "spec_json, grp FROM services WHERE version_uuid = ? ORDER BY name"));
  st.Bind(1, version_uuid);
  std::vector<ServiceRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ServiceRecord s;
    s.name = st.Text(0);
    s.service_type = st.Text(1);
    s.compute_type = st.Text(2);
    s.brand = st.Text(3);
    s.image = st.Text(4);
    s.package = st.Text(5);
    s.count = st.Int(6);
    s.spec_hash = st.Text(7);
    s.spec_json = st.Text(8);
    s.group = st.Text(9);
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<GroupRecord>> SqlProjectStore::ListGroups(const std::string& version_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT name, services FROM deployment_groups WHERE version_uuid = ? ORDER BY name"));
  st.Bind(1, version_uuid);
  std::vector<GroupRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    GroupRecord g;
    g.name = st.Text(0);
    g.services = absl::StrSplit(st.Text(1), ',', absl::SkipEmpty());
    out.push_back(std::move(g));
  }
  return out;
}

absl::StatusOr<VersionRecord> SqlProjectStore::TagVersion(const std::string& project_uuid, const std::string& ref,
                                                             const std::string& tag, const std::string& actor) {
  if (!IsDnsLabel(tag) || absl::ascii_isdigit(tag[0]) || tag == "current" || tag == "latest") {
    return absl::InvalidArgumentError(absl::StrCat(
        "tag \"", tag, "\" must be a DNS label that starts with a letter and is not \"current\" or \"latest\""));
  }
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(VersionRecord v, GetVersionLocked(project_uuid, ref, false));
  ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO version_tags (project_uuid, tag, version_uuid) VALUES (?, ?, ?) "
                                         "ON CONFLICT (project_uuid, tag) DO UPDATE SET version_uuid = excluded.version_uuid"));
  st.Bind(1, project_uuid).Bind(2, tag).Bind(3, v.uuid);
  RETURN_IF_ERROR(st.Run());
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "version.tag", v.uuid, absl::StrCat(tag, " -> version ", v.number)).status());
  RETURN_IF_ERROR(txn->Commit());
  return GetVersionLocked(project_uuid, v.uuid, false);
}

absl::StatusOr<std::optional<MetaRecord>> SqlProjectStore::FindMetaLocked(const std::string& project_uuid,
                                                                             const std::string& key) {
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT key, value, secret, cas_id, updated_at FROM meta WHERE project_uuid = ? AND key = ?"));
  st.Bind(1, project_uuid).Bind(2, key);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<MetaRecord>();
  ASSIGN_OR_RETURN(MetaRecord m, ReadMetaRow(st, project_uuid));
  return std::optional<MetaRecord>(std::move(m));
}

absl::StatusOr<MetaRecord> SqlProjectStore::ReadMetaRow(const Statement& st, const std::string& project_uuid) {
  MetaRecord m{st.Text(0), st.Text(1), st.Int(2) != 0, st.Int(3), FromMicros(st.Int(4))};
  const SecretCodec* codec = codec_.load();
  if (m.secret && codec != nullptr) {
    auto plain = codec->Unseal(m.value, absl::StrCat(project_uuid, "/", m.key));
    if (!plain.ok()) return Annotate(plain.status(), absl::StrCat("meta key \"", m.key, "\""));
    m.value = *std::move(plain);
  }
  return m;
}

absl::StatusOr<std::vector<MetaRecord>> SqlProjectStore::ListMeta(const std::string& project_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<MetaRecord>> {
    ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT key, value, secret, cas_id, updated_at FROM meta WHERE "
                                          "project_uuid = ? ORDER BY key"));
    st.Bind(1, project_uuid);
    std::vector<MetaRecord> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(MetaRecord m, ReadMetaRow(st, project_uuid));
      out.push_back(std::move(m));
    }
    return out;
  });
}

absl::StatusOr<MetaRecord> SqlProjectStore::GetMeta(const std::string& project_uuid, const std::string& key) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto m, FindMetaLocked(project_uuid, key));
  if (!m) return absl::NotFoundError(absl::StrCat("no meta key \"", key, "\""));
  return *m;
}

absl::Status SqlProjectStore::CheckCasLocked(const std::string& key, const std::optional<MetaRecord>& cur,
                                                std::optional<int64_t> cas) {
  if (!cas.has_value()) return absl::OkStatus();
  int64_t have = cur ? cur->cas_id : 0;
  if (have == *cas) return absl::OkStatus();
  return absl::AbortedError(absl::StrCat(
      "meta key \"", key, "\" ", cur ? absl::StrCat("is at cas ", have) : "does not exist", ", not ", *cas,
      "; someone else changed it: read it again (`mariposa meta get ", key, "`) and retry with the new --cas"));
}

absl::Status SqlProjectStore::CheckMetaRoomLocked(const std::string& project_uuid, const std::string& project_name,
                                                     int64_t new_keys) {
  if (new_keys <= 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto count, db_->Prepare("SELECT COUNT(*) FROM meta WHERE project_uuid = ?"));
  count.Bind(1, project_uuid);
  ASSIGN_OR_RETURN(bool row, count.Step());
  int64_t have = row ? count.Int(0) : 0;
  if (have + new_keys > Limits::kMaxStoredMeta) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "project ", project_name, " has ", have, " meta keys; ", new_keys, " more would pass the limit of ",
        Limits::kMaxStoredMeta, " per project; delete unused keys (`mariposa meta delete KEY`) first"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MetaRecord> SqlProjectStore::WriteMetaLocked(const std::string& project_uuid,
                                                               const std::string& project_name, const std::string& key,
                                                               const std::string& value, bool secret,
                                                               const std::string& actor, const std::string& kind) {
  RETURN_IF_ERROR(CheckText(absl::StrCat("value of meta key \"", key, "\""), value, Limits::kMaxValueBytes));
  ASSIGN_OR_RETURN(int64_t cas_id,
                   AppendEventLocked(actor, project_name, kind, key,
                                     absl::StrCat(key, "=", Redact(value, secret), secret ? " (secret)" : "")));
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO meta (project_uuid, key, value, secret, cas_id, updated_at) "
                                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project_uuid, key) DO UPDATE SET "
                                "value = excluded.value, secret = excluded.secret, cas_id = excluded.cas_id, "
                                "updated_at = excluded.updated_at"));
  int64_t now = NowMicros();
  // A secret is sealed before it reaches the file (docs/security.md).
  const SecretCodec* codec = codec_.load();
  std::string stored = secret && codec != nullptr ? codec->Seal(value, absl::StrCat(project_uuid, "/", key)) : value;
  st.Bind(1, project_uuid).Bind(2, key).Bind(3, stored).Bind(4, secret).Bind(5, cas_id).Bind(6, now);
  RETURN_IF_ERROR(st.Run());
  return MetaRecord{key, value, secret, cas_id, FromMicros(now)};
}


absl::StatusOr<MetaRecord> SqlProjectStore::UpdateMeta(const std::string& project_uuid, const std::string& key,
                                                          std::optional<int64_t> cas, const std::string& actor,
                                                          const std::string& kind, const MetaUpdate& update) {
  RETURN_IF_ERROR(CheckMetaKey(key));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, key));
  RETURN_IF_ERROR(CheckCasLocked(key, cur, cas));
  if (!cur) RETURN_IF_ERROR(CheckMetaRoomLocked(p.uuid, p.name, 1));
  ASSIGN_OR_RETURN(auto next, update(cur));
  // Once secret, a key stays secret until deleted: a plain overwrite must
  // not make the next reader think the value is safe to print.
  bool secret = next.second || (cur && cur->secret);
  ASSIGN_OR_RETURN(MetaRecord m, WriteMetaLocked(p.uuid, p.name, key, next.first, secret, actor, kind));
  RETURN_IF_ERROR(txn->Commit());
  return m;
}

absl::StatusOr<MetaRecord> SqlProjectStore::SetMeta(const std::string& project_uuid, const std::string& key,
                                                       const std::string& value, bool secret,
                                                       std::optional<int64_t> cas, const std::string& actor) {
  return UpdateMeta(project_uuid, key, cas, actor, "meta.set",
                    [&](const std::optional<MetaRecord>&) -> absl::StatusOr<std::pair<std::string, bool>> {
                      return std::make_pair(value, secret);
                    });
}

absl::Status SqlProjectStore::DeleteMeta(const std::string& project_uuid, const std::string& key,
                                            std::optional<int64_t> cas, const std::string& actor) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, key));
  if (!cur) return absl::NotFoundError(absl::StrCat("no meta key \"", key, "\""));
  RETURN_IF_ERROR(CheckCasLocked(key, cur, cas));
  ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM meta WHERE project_uuid = ? AND key = ?"));
  st.Bind(1, p.uuid).Bind(2, key);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "meta.delete", key, key).status());
  return txn->Commit();
}

absl::StatusOr<MetaRecord> SqlProjectStore::IncrMeta(const std::string& project_uuid, const std::string& key,
                                                        int64_t delta, std::optional<int64_t> cas,
                                                        const std::string& actor) {
  return UpdateMeta(project_uuid, key, cas, actor, delta >= 0 ? "meta.incr" : "meta.decr",
                    [&](const std::optional<MetaRecord>& cur) -> absl::StatusOr<std::pair<std::string, bool>> {
                      int64_t value = 0;
                      if (cur && !absl::SimpleAtoi(cur->value, &value)) {
                        return absl::FailedPreconditionError(absl::StrCat(
                            "meta key \"", key, "\" holds ",
                            cur->secret ? "a secret" : absl::StrCat("\"", cur->value, "\""),
                            ", not a whole number; incr/decr work on integers only"));
                      }
                      int64_t sum;
                      RETURN_IF_ERROR(CheckedAdd(value, delta, absl::StrCat("meta key \"", key, "\""), &sum));
                      return std::make_pair(absl::StrCat(sum), false);
                    });
}

absl::StatusOr<int> SqlProjectStore::ImportMeta(const std::string& project_uuid,
                                                   const std::map<std::string, std::string>& entries, bool secret,
                                                   const std::string& actor) {
  if (entries.size() > static_cast<size_t>(Limits::kMaxStoredMeta)) {
    return absl::InvalidArgumentError(absl::StrCat(entries.size(), " entries; a project holds at most ",
                                                   Limits::kMaxStoredMeta, " meta keys"));
  }
  for (const auto& kv : entries) RETURN_IF_ERROR(CheckMetaKey(kv.first));
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  ASSIGN_OR_RETURN(auto p, GetProjectLocked(project_uuid));
  // One read per key: whether it is new (the limit) and whether it is secret.
  std::vector<std::optional<MetaRecord>> current;
  current.reserve(entries.size());
  int64_t new_keys = 0;
  for (const auto& kv : entries) {
    ASSIGN_OR_RETURN(auto cur, FindMetaLocked(p.uuid, kv.first));
    if (!cur) ++new_keys;
    current.push_back(std::move(cur));
  }
  RETURN_IF_ERROR(CheckMetaRoomLocked(p.uuid, p.name, new_keys));
  size_t i = 0;
  for (const auto& kv : entries) {
    const std::optional<MetaRecord>& cur = current[i++];
    RETURN_IF_ERROR(WriteMetaLocked(p.uuid, p.name, kv.first, kv.second, secret || (cur && cur->secret), actor,
                                    "meta.import")
                        .status());
  }
  RETURN_IF_ERROR(txn->Commit());
  return static_cast<int>(entries.size());
}

absl::Status SqlProjectStore::MarkProjectDeleting(const std::string& name_or_uuid, const std::string& actor,
                                                 bool delete_volumes, const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(name_or_uuid));
  ASSIGN_OR_RETURN(ProjectRecord p, GetProjectLocked(name_or_uuid));
  // deleting: 1, or 2 with --delete-volumes (an integer column since
  // schema 5: no migration); asked again, --delete-volumes is never undone.
  ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE projects SET deleting = CASE WHEN deleting > ?1 THEN deleting "
                                         "ELSE ?1 END WHERE uuid = ?2"));
  st.Bind(1, int64_t{delete_volumes ? 2 : 1}).Bind(2, p.uuid);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, p.name, "project.delete-requested", p.uuid, detail).status());
  return txn->Commit();
}

}  // namespace mariposa
