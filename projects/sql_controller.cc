// SqlProjectStore: the controller's own (controller_store.h): memory,
// instance clocks, settings, heartbeats, leases and fences, on SQLite and
// PostgreSQL.
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

absl::StatusOr<std::string> SqlProjectStore::GetControllerMemory(const std::string& project_uuid) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT body FROM controller_memory WHERE project_uuid = ?"));
  st.Bind(1, project_uuid);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

absl::Status SqlProjectStore::PutControllerMemory(const std::string& project_uuid, const std::string& body) {
  absl::MutexLock l(&mu_);
  // A project deleted meanwhile has nothing to remember (no row to refer to).
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO controller_memory (project_uuid, body, updated_at) "
                                "SELECT uuid, ?, ? FROM projects WHERE uuid = ? "
                                "ON CONFLICT (project_uuid) DO UPDATE SET body = excluded.body, "
                                "updated_at = excluded.updated_at"));
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  st.Bind(1, body).Bind(2, NowMicros()).Bind(3, project_uuid);
  RETURN_IF_ERROR(st.Run());
  return txn->Commit();
}

absl::StatusOr<std::vector<InstanceTimes>> SqlProjectStore::ListInstanceTimes(const std::string& project_uuid) {
  return Read([&](Database* db) -> absl::StatusOr<std::vector<InstanceTimes>> {
    ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT instance, spec_hash, image_uuid, up_since, healthy_since, health "
                                          "FROM instance_times WHERE project_uuid = ? ORDER BY instance"));
    st.Bind(1, project_uuid);
    std::vector<InstanceTimes> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      InstanceTimes t{st.Text(0), st.Text(1), st.Text(2)};
      if (!st.IsNull(3)) t.up_since = FromMicros(st.Int(3));
      if (!st.IsNull(4)) t.healthy_since = FromMicros(st.Int(4));
      t.health = st.Text(5);
      out.push_back(std::move(t));
    }
    return out;
  });
}

absl::Status SqlProjectStore::UpdateInstanceTimes(const std::string& project_uuid,
                                                     const std::vector<InstanceTimes>& changed,
                                                     const std::vector<std::string>& gone) {
  if (changed.empty() && gone.empty()) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginProjectLocked(project_uuid));
  {
    // The project's lock is held: it cannot go while this writes.
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT 1 FROM projects WHERE uuid = ?"));
    st.Bind(1, project_uuid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return absl::OkStatus();  // deleted meanwhile: nothing to keep
  }
  // An instance named twice: as named last.
  std::vector<const InstanceTimes*> rows = LastOfEach(changed, [](const InstanceTimes& t) { return t.instance; });
  RETURN_IF_ERROR(InsertRows(
      db_.get(), "instance_times",
      {"project_uuid", "instance", "spec_hash", "image_uuid", "up_since", "healthy_since", "health"}, rows.size(),
      [&](Statement& st, size_t row, int f) {
        const InstanceTimes& t = *rows[row];
        st.Bind(f, project_uuid).Bind(f + 1, t.instance).Bind(f + 2, t.spec_hash).Bind(f + 3, t.image_uuid);
        if (t.up_since == absl::InfiniteFuture()) st.BindNull(f + 4);
        else st.Bind(f + 4, absl::ToUnixMicros(t.up_since));
        if (t.healthy_since == absl::InfiniteFuture()) st.BindNull(f + 5);
        else st.Bind(f + 5, absl::ToUnixMicros(t.healthy_since));
        st.Bind(f + 6, t.health);
      },
      "ON CONFLICT (project_uuid, instance) DO UPDATE SET spec_hash = excluded.spec_hash, "
      "image_uuid = excluded.image_uuid, up_since = excluded.up_since, "
      "healthy_since = excluded.healthy_since, health = excluded.health"));
  RETURN_IF_ERROR(ForEachBatch(
      db_.get(), gone.size(),
      [](size_t n) {
        return absl::StrCat("DELETE FROM instance_times WHERE project_uuid = ? AND instance IN (", ParamGroups(n, 1), ")");
      },
      [&](Statement& st, size_t first, size_t n) {
        st.Bind(1, project_uuid);
        for (size_t i = 0; i < n; ++i) st.Bind(2 + static_cast<int>(i), gone[first + i]);
        return st.Run();
      }));
  return txn->Commit();
}

absl::StatusOr<std::string> SqlProjectStore::GetSetting(const std::string& key) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT value FROM settings WHERE key = ?"));
  st.Bind(1, key);
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

absl::Status SqlProjectStore::SetSetting(const std::string& key, const std::string& value,
                                            const std::string& actor, const std::string& kind,
                                            const std::string& detail) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, BeginLocked());
  ASSIGN_OR_RETURN(auto st, db_->Prepare(
                                "INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?, ?, ?, ?) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                                "updated_at = excluded.updated_at, updated_by = excluded.updated_by"));
  st.Bind(1, key).Bind(2, value).Bind(3, NowMicros()).Bind(4, actor);
  RETURN_IF_ERROR(st.Run());
  RETURN_IF_ERROR(AppendEventLocked(actor, "", kind, key, detail).status());
  return txn->Commit();
}

absl::Status SqlProjectStore::CheckFenceOn(Database* db, const Fence& f) {
  // On PostgreSQL the lease row stays as read until the transaction ends: a
  // takeover on another node waits for this write (SQLite: one writer). The
  // row and the database's clock come in one statement.
  ASSIGN_OR_RETURN(auto st, db->Prepare(postgres_ ? LeaseRowPg("?")
                                                  : std::string("SELECT holder, epoch, expires_at FROM leases "
                                                                "WHERE project_uuid = ?")));
  st.Bind(1, f.project);
  ASSIGN_OR_RETURN(bool row, st.Step());
  LeaseRead read;
  if (row) read = {st.Text(0), st.Int(1), st.Int(2), postgres_ ? st.Int(3) : 0};
  if (!postgres_) read.now = NowMicros();
  return FenceHolds(f, read);
}

absl::Status FenceHolds(const Fence& f, const LeaseRead& lease) {
  if (lease.holder == f.node && lease.epoch == f.epoch &&
      lease.expires - absl::ToInt64Microseconds(f.margin) > lease.now) {
    return absl::OkStatus();
  }
  std::string now_held = lease.holder.empty() || lease.expires <= lease.now
                             ? "nobody holds it now"
                             : absl::StrCat("node ", lease.holder, " holds it at epoch ", lease.epoch);
  return absl::AbortedError(absl::StrCat(
      "node ", f.node, " no longer holds the lease of project ", f.project, " at epoch ", f.epoch,
      lease.holder == f.node && lease.epoch == f.epoch ? " with time to act (it runs out within the safety margin)"
                                                       : "",
      " (", now_held, "); nothing was written. The node holding the lease carries on"));
}

absl::Status SqlProjectStore::CheckFence(const Fence& fence) {
  absl::MutexLock l(&mu_);
  return CheckFenceLocked(fence);
}

absl::StatusOr<LeaseState> SqlProjectStore::Heartbeat(const std::string& node, const std::string& address,
                                                      absl::Time started_at) {
  absl::MutexLock l(&mu_);
  // This node's row only; reads what others committed.
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  LeaseState out;
  ASSIGN_OR_RETURN(int64_t now, DbNowMicrosLocked());
  out.now = FromMicros(now);
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO nodes (node, address, started_at, seen_at) VALUES (?, ?, ?, ?) "
                                           "ON CONFLICT (node) DO UPDATE SET address = excluded.address, "
                                           "started_at = excluded.started_at, seen_at = excluded.seen_at"));
    st.Bind(1, node).Bind(2, address).Bind(3, absl::ToUnixMicros(started_at)).Bind(4, now);
    RETURN_IF_ERROR(st.Run());
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT node, seen_at, address, started_at FROM nodes ORDER BY node"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.nodes.push_back(NodeBeat{st.Text(0), FromMicros(st.Int(1)), st.Text(2), FromMicros(st.Int(3))});
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT uuid FROM projects ORDER BY uuid"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.projects.push_back(st.Text(0));
    }
  }
  {
    ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT project_uuid, holder, epoch, expires_at FROM leases"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.leases[st.Text(0)] = Lease{st.Text(0), st.Text(1), st.Int(2), FromMicros(st.Int(3))};
    }
  }
  RETURN_IF_ERROR(txn->Commit());
  return out;
}

absl::StatusOr<std::vector<bool>> SqlProjectStore::WriteLeases(const std::vector<LeaseWrite>& writes) {
  std::vector<bool> made;
  if (writes.empty()) return made;
  absl::MutexLock l(&mu_);
  // Conditional writes of single rows, in the order of the projects' uuids
  // (two nodes' batches never wait for each other in a cycle): a write that
  // waits for another node's re-checks its condition on the row as that
  // one left it (PostgreSQL's READ COMMITTED).
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  std::vector<size_t> order(writes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return writes[a].project < writes[b].project; });
  made.assign(writes.size(), false);
  ASSIGN_OR_RETURN(int64_t now, DbNowMicrosLocked());
  ASSIGN_OR_RETURN(auto insert, db_->Prepare("INSERT INTO leases (project_uuid, holder, epoch, expires_at) "
                                             "SELECT uuid, ?, ?, ? FROM projects WHERE uuid = ? "
                                             "ON CONFLICT (project_uuid) DO NOTHING"));
  ASSIGN_OR_RETURN(auto acquire, db_->Prepare("UPDATE leases SET holder = ?1, epoch = ?2, expires_at = ?3 "
                                              "WHERE project_uuid = ?4 AND epoch = ?5 AND "
                                              "(holder = '' OR expires_at <= ?6)"));
  ASSIGN_OR_RETURN(auto renew, db_->Prepare("UPDATE leases SET expires_at = ?3 WHERE project_uuid = ?4 AND "
                                            "epoch = ?5 AND holder = ?1 AND expires_at > ?6"));
  ASSIGN_OR_RETURN(auto release, db_->Prepare("UPDATE leases SET holder = '', expires_at = 0 WHERE "
                                              "project_uuid = ?4 AND epoch = ?5 AND holder = ?1"));
  // Numbers a statement does not use are harmless: they are sent typed.
  for (size_t i : order) {
    const LeaseWrite& w = writes[i];
    Statement* st = w.kind == LeaseWrite::kRenew     ? &renew
                    : w.kind == LeaseWrite::kRelease ? &release
                    : w.expected_epoch == 0          ? &insert
                                                     : &acquire;
    RETURN_IF_ERROR(st->Reset());
    st->Bind(1, w.node).Bind(2, w.epoch).Bind(3, absl::ToUnixMicros(w.expires)).Bind(4, w.project);
    if (st != &insert) st->Bind(5, w.expected_epoch).Bind(6, now);
    RETURN_IF_ERROR(st->Run());
    made[i] = db_->Changes() == 1;
  }
  RETURN_IF_ERROR(txn->Commit());
  return made;
}

absl::Status SqlProjectStore::LeaveNode(const std::string& node) {
  absl::MutexLock l(&mu_);
  ASSIGN_OR_RETURN(auto txn, Transaction::Begin(db_.get(), WriteScope::kShared));
  ASSIGN_OR_RETURN(auto rel, db_->Prepare("UPDATE leases SET holder = '', expires_at = 0 WHERE holder = ?"));
  rel.Bind(1, node);
  RETURN_IF_ERROR(rel.Run());
  ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM nodes WHERE node = ?"));
  del.Bind(1, node);
  RETURN_IF_ERROR(del.Run());
  return txn->Commit();
}

}  // namespace mariposa
