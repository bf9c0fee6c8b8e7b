// SqlProjectStore: ProjectStore on SQLite (WAL, synchronous=FULL, foreign
// keys on; the default, embedded) or on PostgreSQL (several mariposad nodes
// on one database), one code for both (common/sql.h), with versioned schema
// migrations that run when it opens.
#ifndef MARIPOSA_PROJECTS_SQL_STORE_H_
#define MARIPOSA_PROJECTS_SQL_STORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/sql.h"
#include "projects/high_water.h"
#include "projects/store.h"

namespace mariposa {

// The database's clock on PostgreSQL, in microseconds since the epoch.
inline constexpr char kPgNowMicros[] = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint";
// PostgreSQL: a project's lease row and the database's clock, the row locked
// until the transaction ends; `project` is a parameter ("?") or a literal
// (when it runs in BEGIN's round trip).
inline std::string LeaseRowPg(absl::string_view project) {
  return absl::StrCat("SELECT holder, epoch, expires_at, ", kPgNowMicros, " FROM leases WHERE project_uuid = ",
                      project, " FOR SHARE");
}

// A project's lease as a write read it, with the database's time then
// (no row: no holder).
struct LeaseRead {
  std::string holder;
  int64_t epoch = 0;
  int64_t expires = 0;  // microseconds
  int64_t now = 0;
};
// Whether the node of `f` may write: it holds the lease at f.epoch with
// more than f.margin left. Otherwise ABORTED, saying who holds it.
absl::Status FenceHolds(const Fence& f, const LeaseRead& lease);

class SqlProjectStore : public ProjectStore {
 public:
  // The newest schema this build knows.
  static constexpr int kSchemaVersion = 14;

  // Opens `path` (":memory:" for tests), migrating it to kSchemaVersion.
  // FAILED_PRECONDITION when the file's schema is newer than this build.
  // `clock` must outlive the store.
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> Open(const std::string& path, const Clock* clock);
  // Like Open, but migrates only up to `version`; to test migrations.
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenAtVersionForTest(const std::string& path,
                                                                                  const Clock* clock, int version);

  // Connects to PostgreSQL (`uri`: a libpq URI or key=value string, several
  // hosts allowed) and migrates its schema (nodes starting together take
  // turns). UNAVAILABLE naming the database when it cannot be reached.
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenPostgres(const std::string& uri, const Clock* clock,
                                                                       int connect_timeout_s = 5);

  // Opens the store a `--store` value names: "sqlite:PATH" or a PostgreSQL
  // URI ("postgresql://…" or "postgres://…"). INVALID_ARGUMENT saying what
  // is accepted for anything else.
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenSpec(const std::string& spec, const Clock* clock);
  // Like OpenSpec, but migrates only up to `version` (OpenSpec: the newest);
  // to test migrations.
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenSpecAtVersionForTest(const std::string& spec,
                                                                                    const Clock* clock, int version);
  // Whether `spec` names PostgreSQL (see OpenSpec).
  static bool IsPostgresSpec(const std::string& spec);

  ~SqlProjectStore() override;

  bool postgres() const { return postgres_; }
  // "sqlite:PATH" or "PostgreSQL at host:port/db" (never a password).
  const std::string& where() const { return where_; }

  // Copies every row of `from` into `to` (every version, meta key, secret
  // as sealed, event with its index, token, grant, task, job and setting)
  // in one transaction of `to`, which must hold no project, event or token
  // (FAILED_PRECONDITION otherwise: nothing is written). Rows read while
  // `from` is in use are those of one moment (one transaction of `from`).
  // Returns the rows copied per table.
  static absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> CopyStore(SqlProjectStore* from,
                                                                                SqlProjectStore* to);

  // The store's own count of committed transactions and its newest event.
  absl::StatusOr<HighWater> CurrentHighWater();
  // From now on, writes the high-water mark to `path` after every commit
  // (and once now, synced). projects/high_water.h.
  absl::Status KeepHighWaterMark(const std::string& path);
  // Every commit SQLite made on this store's connection; equal to
  // CurrentHighWater().commits' growth when every write is counted.
  int64_t CommitsSeenForTest() { return db_->commits_seen(); }
  // Runs `while_held` holding the writer's lock, as a commit does across its
  // fsync (tests: reads must not wait for it).
  void HoldWriterForTest(const std::function<void()>& while_held) {
    absl::MutexLock l(&mu_);
    while_held();
  }

  using ProjectStore::CreateProject;
  absl::StatusOr<ProjectRecord> CreateProject(const std::string& name, const std::string& description,
                                              const std::string& actor, const std::string& owner) override;
  absl::StatusOr<int> ClaimUnownedProjects(const std::string& owner) override;
  absl::StatusOr<std::vector<ProjectRecord>> ListProjects() override;
  absl::StatusOr<ProjectRecord> GetProject(const std::string& name_or_uuid) override;
  absl::StatusOr<std::pair<ProjectRecord, std::optional<VersionRecord>>> GetProjectWithCurrent(
      const std::string& name_or_uuid) override;
  absl::Status DeleteProject(const std::string& name_or_uuid, const std::string& actor) override;
  absl::StatusOr<CommitResult> CommitVersion(const NewVersion& v) override;
  absl::StatusOr<std::vector<VersionRecord>> ListVersions(const std::string& project_uuid) override;
  absl::StatusOr<VersionRecord> GetVersion(const std::string& project_uuid, const std::string& ref,
                                           bool include_text) override;
  absl::StatusOr<std::vector<ServiceRecord>> ListServices(const std::string& version_uuid) override;
  absl::StatusOr<std::vector<GroupRecord>> ListGroups(const std::string& version_uuid) override;
  absl::StatusOr<VersionRecord> TagVersion(const std::string& project_uuid, const std::string& ref,
                                           const std::string& tag, const std::string& actor) override;
  absl::StatusOr<std::vector<MetaRecord>> ListMeta(const std::string& project_uuid) override;
  absl::StatusOr<MetaRecord> GetMeta(const std::string& project_uuid, const std::string& key) override;
  absl::StatusOr<MetaRecord> SetMeta(const std::string& project_uuid, const std::string& key,
                                     const std::string& value, bool secret, std::optional<int64_t> cas,
                                     const std::string& actor) override;
  absl::Status DeleteMeta(const std::string& project_uuid, const std::string& key, std::optional<int64_t> cas,
                          const std::string& actor) override;
  absl::StatusOr<MetaRecord> IncrMeta(const std::string& project_uuid, const std::string& key, int64_t delta,
                                      std::optional<int64_t> cas, const std::string& actor) override;
  absl::StatusOr<int> ImportMeta(const std::string& project_uuid, const std::map<std::string, std::string>& entries,
                                 bool secret, const std::string& actor) override;
  using ProjectStore::ListEvents;
  using ProjectStore::ListNewestEvents;
  ChangeSignal* EventsSignal() override { return &events_signal_; }
  absl::StatusOr<std::vector<EventRecord>> ListEvents(const std::string& project, int64_t after_index, int limit,
                                                      const std::vector<std::string>& kinds) override;
  absl::StatusOr<std::vector<EventRecord>> ListNewestEvents(const std::string& project, int64_t after_index,
                                                            int limit, const std::vector<std::string>& kinds) override;
  absl::StatusOr<int64_t> CountEvents(const std::string& project, int64_t after_index, int64_t before_index,
                                      const std::vector<std::string>& kinds) override;
  absl::StatusOr<int64_t> LastEventIndex() override;
  absl::Status AppendEvents(const std::vector<EventRecord>& events) override;
  absl::StatusOr<int64_t> AppendEvent(const std::string& actor, const std::string& project, const std::string& kind,
                                      const std::string& subject, const std::string& detail) override;
  absl::StatusOr<std::string> GetControllerMemory(const std::string& project_uuid) override;
  absl::Status PutControllerMemory(const std::string& project_uuid, const std::string& body) override;
  absl::StatusOr<std::vector<InstanceTimes>> ListInstanceTimes(const std::string& project_uuid) override;
  absl::Status UpdateInstanceTimes(const std::string& project_uuid, const std::vector<InstanceTimes>& changed,
                                   const std::vector<std::string>& gone) override;
  absl::StatusOr<std::string> GetSetting(const std::string& key) override;
  absl::Status SetSetting(const std::string& key, const std::string& value, const std::string& actor,
                          const std::string& kind, const std::string& detail) override;
  absl::StatusOr<int64_t> Backup(const std::string& path) override;
  int SchemaVersion() override;
  void SetSecretCodec(const SecretCodec* codec) override;
  absl::StatusOr<int> ResealSecrets() override;
  absl::StatusOr<TokenRecord> CreateToken(const TokenRecord& t) override;
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override;
  absl::StatusOr<TokenRecord> FindTokenByHash(const std::string& hash) override;
  absl::StatusOr<TokenRecord> RevokeToken(const std::string& id_or_name, const std::string& actor) override;
  absl::StatusOr<GrantRecord> SetGrant(const GrantRecord& g) override;
  absl::StatusOr<std::vector<GrantRecord>> ListGrants() override;
  absl::Status DeleteGrant(const std::string& subject, const std::string& project, const std::string& actor) override;

  absl::StatusOr<TaskRecord> AddTask(const TaskRecord& task, const TaskAdmitter& admit) override;
  absl::StatusOr<std::vector<TaskRecord>> ListTasks(const std::string& project_uuid, int finished_limit) override;
  absl::Status AddTaskProgress(const std::string& uuid, const TaskProgress& delta) override;
  absl::StatusOr<TaskRecord> SetTaskPaused(const std::string& uuid, const std::string& actor,
                                           const std::string& reason, bool paused) override;
  absl::Status MarkProjectDeleting(const std::string& name_or_uuid, const std::string& actor, bool delete_volumes,
                                   const std::string& detail) override;
  absl::StatusOr<std::vector<TaskRecord>> ListOpenTasks() override;
  using TaskStore::RecordJobs;
  absl::Status RecordJobs(const std::vector<JobRecord>& jobs,
                          const std::vector<std::pair<std::string, TaskProgress>>& progress,
                          const std::vector<EventRecord>& events) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobsExcept(const std::string& project_uuid,
                                                        const absl::flat_hash_set<std::string>& except) override;
  absl::Status FinishJobs(const std::vector<std::pair<std::string, TaskProgress>>& jobs,
                          const std::vector<EventRecord>& events = {}) override;
  absl::StatusOr<std::vector<TaskCount>> CountTasks() override;
  absl::StatusOr<TaskRecord> GetTask(const std::string& uuid) override;

  // RolloutStore (sql_rollouts.cc).
  absl::StatusOr<RolloutRecord> AddRollout(const RolloutRecord& r, const std::string& actor) override;
  absl::StatusOr<std::vector<RolloutRecord>> ListRollouts(const std::string& project, bool all) override;
  absl::StatusOr<RolloutRecord> GetRollout(const std::string& uuid) override;
  absl::StatusOr<RolloutRecord> UpdateRollout(const RolloutRecord& r, const std::string& actor,
                                              const std::string& event_kind, const std::string& detail) override;
  absl::StatusOr<LeaseState> Heartbeat(const std::string& node, const std::string& address,
                                       absl::Time started_at) override;
  absl::StatusOr<std::vector<bool>> WriteLeases(const std::vector<LeaseWrite>& writes) override;
  absl::Status LeaveNode(const std::string& node) override;
  absl::Status CheckFence(const Fence& fence) override;
  absl::StatusOr<TaskRecord> SetTaskState(const std::string& uuid, const std::string& state,
                                          const std::string& error) override;

  // PRAGMA integrity_check; OK when the file is sound.
  absl::Status CheckIntegrity();
  // Everything start-up checks before serving: the schema version, every
  // table, index and trigger of the current schema (compared with a freshly
  // migrated store), CheckIntegrity, every version's canonical text against
  // its sha256, and valid UTF-8 in the goal-state tables. DATA_LOSS (or
  // FAILED_PRECONDITION for a schema mismatch) saying what is wrong.
  absl::Status Verify();

 private:
  SqlProjectStore(std::unique_ptr<Database> db, const Clock* clock)
      : postgres_(db->postgres()), where_(db->postgres() ? db->path() : "sqlite:" + db->path()), db_(std::move(db)),
        clock_(clock) {
    db_->SetNoticeHook([this] { events_signal_.Notify(); });
  }
  absl::Status Migrate(int target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status MigratePostgres(int target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UseEventHorizonLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static absl::StatusOr<std::unique_ptr<SqlProjectStore>> OpenPostgresAt(const std::string& uri, const Clock* clock,
                                                                         int connect_timeout_s, int version);
  // A write transaction, checking the calling thread's fence (ScopedFence)
  // inside it.
  // A write transaction (common/sql.h): kStore takes turns with every
  // writer on every node; kShared runs alongside others and locks its
  // project with LockKey (the project's uuid) before reading what it
  // changes.
  absl::StatusOr<std::unique_ptr<Transaction>> BeginLocked(WriteScope scope = WriteScope::kStore)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return BeginOn(db_.get(), scope);
  }
  // The same on `db`: the writer's (under mu_) or a pooled writer's (under
  // its own lock: WithWriter).
  absl::StatusOr<std::unique_ptr<Transaction>> BeginOn(Database* db, WriteScope scope);
  // kShared with the project's lock (a project that does not exist: none;
  // the caller finds it missing); with the lock of the task's project.
  absl::StatusOr<std::unique_ptr<Transaction>> BeginProjectLocked(const std::string& name_or_uuid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::unique_ptr<Transaction>> BeginTaskLocked(const std::string& task_uuid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckFenceLocked(const Fence& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return CheckFenceOn(db_.get(), f);
  }
  absl::Status CheckFenceOn(Database* db, const Fence& f);
  // The time by the database's clock (PostgreSQL's, shared by every node;
  // the store's clock on SQLite).
  absl::StatusOr<int64_t> DbNowMicrosLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return DbNowMicrosOn(db_.get()); }
  absl::StatusOr<int64_t> DbNowMicrosOn(Database* db);
  // PostgreSQL: connections of their own for the writes the controller
  // makes most (jobs sent and ended, task progress, events), so that
  // writes of different projects commit at once on one node as on several
  // (kShared transactions; a commit waits for the WAL's flush, and one
  // connection made every project's writes take turns behind it). Empty
  // on SQLite (one writer at a time by design): WithWriter then uses the
  // writer's connection under mu_.
  static constexpr int kPooledWriters = 4;
  struct PooledWriter {
    absl::Mutex mu;
    std::unique_ptr<Database> db ABSL_GUARDED_BY(mu);
  };
  std::vector<std::unique_ptr<PooledWriter>> writers_;  // set once at open
  std::atomic<size_t> next_writer_{0};
  // Runs `write(db)` on a free pooled writer (the next one in turn when all
  // are busy), or on the writer's connection under mu_ when there is no
  // pool.
  template <typename F>
  auto WithWriter(F&& write) -> decltype(write(static_cast<Database*>(nullptr))) {
    if (writers_.empty()) {
      absl::MutexLock l(&mu_);
      return write(db_.get());
    }
    const size_t first = next_writer_.fetch_add(1) % writers_.size();
    for (size_t k = 0; k < writers_.size(); ++k) {
      PooledWriter& w = *writers_[(first + k) % writers_.size()];
      if (w.mu.TryLock()) {
        struct Unlock {
          absl::Mutex* mu;
          ~Unlock() { mu->Unlock(); }
        } unlock{&w.mu};
        return write(w.db.get());
      }
    }
    PooledWriter& w = *writers_[first];
    absl::MutexLock l(&w.mu);
    return write(w.db.get());
  }
  // The version the schema is at (SQLite's user_version, PostgreSQL's
  // mariposa_schema row); 0 for a new store.
  absl::StatusOr<int> SchemaVersionLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A project's jobs in flight ("" = every project's), oldest first.
  absl::StatusOr<std::vector<JobRecord>> QueryJobsLocked(const std::string& project_uuid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<HighWater> ReadHighWaterLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The commit hooks (run inside Transaction::Commit, under mu_).
  absl::Status StampLocked();
  void WriteMarkLocked();

  absl::StatusOr<ProjectRecord> GetProjectLocked(const std::string& name_or_uuid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return GetProjectOn(db_.get(), name_or_uuid);
  }
  // The reads behind GetProject, GetVersion, ListMeta and ListTasks, on the
  // connection given: the writer's (under mu_) or the reader's (Read).
  absl::StatusOr<ProjectRecord> GetProjectOn(Database* db, const std::string& name_or_uuid,
                                             std::optional<VersionRecord>* current = nullptr);
  absl::StatusOr<VersionRecord> GetVersionOn(Database* db, const std::string& project_uuid, const std::string& ref,
                                             bool include_text);
  absl::StatusOr<std::vector<std::string>> TagsOn(Database* db, const std::string& version_uuid);
  absl::StatusOr<std::vector<TaskRecord>> QueryTasksOn(Database* db, const std::string& where, const std::string& arg);
  absl::StatusOr<std::vector<RolloutRecord>> QueryRolloutsLocked(const std::string& where, const std::string& arg)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `read` on the read connection under its own lock, so that reads do
  // not wait while a writer holds mu_ across its commit's fsync (P8: a
  // no-op Apply's p99 met the health events' commits). SQLite's WAL lets a
  // reader see the last commit while a writer works. A store in memory has
  // no second connection: `read` then runs on the writer's, under mu_.
  template <typename F>
  auto Read(F&& read) -> decltype(read(static_cast<Database*>(nullptr))) {
    if (reader_ != nullptr) {
      absl::MutexLock l(&reader_mu_);
      return read(reader_.get());
    }
    absl::MutexLock l(&mu_);
    return read(db_.get());
  }
  // Events after `after_index` in index `order` ("ASC"/"DESC"), at most `limit`.
  absl::StatusOr<std::vector<EventRecord>> QueryEventsLocked(const char* order, const std::string& project,
                                                             int64_t after_index, int limit,
                                                             const std::vector<std::string>& kinds)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts a project row and its project.create event; its uuid.
  absl::StatusOr<std::string> InsertProjectLocked(const std::string& name, const std::string& description,
                                                  const std::string& owner, const std::string& actor)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<VersionRecord> GetVersionLocked(const std::string& project_uuid, const std::string& ref,
                                                 bool include_text) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return GetVersionOn(db_.get(), project_uuid, ref, include_text);
  }
  absl::StatusOr<std::optional<MetaRecord>> FindMetaLocked(const std::string& project_uuid, const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks `cas` against the current entry; ABORTED on mismatch.
  absl::Status CheckCasLocked(const std::string& key, const std::optional<MetaRecord>& cur,
                              std::optional<int64_t> cas) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shared path of SetMeta and IncrMeta: checks the key and `cas` inside
  // one transaction, asks `update` for the new (value, secret), writes it.
  using MetaUpdate =
      std::function<absl::StatusOr<std::pair<std::string, bool>>(const std::optional<MetaRecord>& current)>;
  absl::StatusOr<MetaRecord> UpdateMeta(const std::string& project_uuid, const std::string& key,
                                        std::optional<int64_t> cas, const std::string& actor, const std::string& kind,
                                        const MetaUpdate& update) ABSL_LOCKS_EXCLUDED(mu_);
  // RESOURCE_EXHAUSTED when `new_keys` more would pass Limits::kMaxStoredMeta.
  absl::Status CheckMetaRoomLocked(const std::string& project_uuid, const std::string& project_name,
                                   int64_t new_keys) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the entry with a fresh cas_id taken from the event it logs.
  absl::StatusOr<MetaRecord> WriteMetaLocked(const std::string& project_uuid, const std::string& project_name,
                                             const std::string& key, const std::string& value, bool secret,
                                             const std::string& actor, const std::string& kind)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends to the event log in the transaction open (in order).
  absl::Status AppendEventsLocked(const std::vector<EventRecord>& events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return AppendEventsOn(db_.get(), events);
  }
  absl::Status AppendEventsOn(Database* db, const std::vector<EventRecord>& events);
  // Appends to the event log; returns the event's index.
  absl::StatusOr<int64_t> AppendEventLocked(const std::string& actor, const std::string& project,
                                            const std::string& kind, const std::string& subject,
                                            const std::string& detail) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A meta row's value as the API sees it: secrets opened with the codec.
  absl::StatusOr<MetaRecord> ReadMetaRow(const Statement& st, const std::string& project_uuid);
  absl::StatusOr<std::vector<std::string>> TagsLocked(const std::string& version_uuid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return TagsOn(db_.get(), version_uuid);
  }
  absl::StatusOr<std::vector<TaskRecord>> QueryTasksLocked(const std::string& where, const std::string& arg)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return QueryTasksOn(db_.get(), where, arg);
  }
  absl::Status AddTaskProgressLocked(const std::string& uuid, const TaskProgress& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return AddTaskProgressOn(db_.get(), uuid, d);
  }
  absl::Status AddTaskProgressOn(Database* db, const std::string& uuid, const TaskProgress& d);
  int64_t NowMicros() const { return absl::ToUnixMicros(clock_->Now()); }

  const bool postgres_;
  const std::string where_;
  absl::Mutex mu_;
  // The jobs table, in memory (SQLite only: on PostgreSQL other nodes write
  // it too): the pump asks for a project's jobs in flight
  // every time a job slot frees (P2's profile had 14 % of mariposad's CPU
  // in that query). Loaded whole at the first ListJobs, then written
  // through by RecordJobs, FinishJobs and DeleteProject after their commits.
  // Keyed as the query ordered: (sent_at µs, job uuid).
  struct JobKey {
    int64_t sent_at;
    std::string job_uuid;
    bool operator<(const JobKey& o) const { return std::tie(sent_at, job_uuid) < std::tie(o.sent_at, o.job_uuid); }
  };
  // The copy is guarded by its own lock (jobs_mu_, taken after mu_): a
  // reader of the jobs in flight (the pump, every time a slot frees) does
  // not wait for a write's commit, which holds mu_ on SQLite; it sees the
  // copy as of the last commit.
  absl::Mutex jobs_mu_ ABSL_ACQUIRED_AFTER(mu_);
  absl::Status LoadJobsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(jobs_mu_);
  void ForgetJobLocked(const std::string& job_uuid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_);
  // The jobs RecordJobs committed, into the copy in memory.
  void KeepJobsLocked(const std::vector<JobRecord>& jobs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_);
  // One job into the copy (not there yet), keyed as the query orders it.
  void PutJobLocked(JobRecord j) ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_);
  // Project `project_uuid`'s jobs in the copy but those in `except`.
  std::vector<JobRecord> JobsExceptLocked(const std::string& project_uuid, const absl::flat_hash_set<std::string>& except)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_);
  // A write of the jobs table (`write`, its transaction on the connection
  // given), then `keep` (under jobs_mu_) bringing the copy in memory up to
  // it. With one writer (SQLite) both run under mu_, so no other write
  // comes between them. With the pool (PostgreSQL) the copy follows the
  // commit: only the lease holder's one worker per project writes a
  // project's jobs, so nothing of the project is written between the two.
  template <typename W, typename K>
  absl::Status WriteJobs(W&& write, K&& keep) {
    if (writers_.empty()) {
      absl::MutexLock l(&mu_);
      if (absl::Status s = LoadJobsLocked(); !s.ok()) return s;
      if (absl::Status s = write(db_.get()); !s.ok()) return s;
      absl::MutexLock j(&jobs_mu_);
      keep();
      return absl::OkStatus();
    }
    if (absl::Status s = WithWriter(write); !s.ok()) return s;
    absl::MutexLock l(&mu_);  // not between a reload's query and its refill (ListJobsExcept)
    absl::MutexLock j(&jobs_mu_);
    keep();
    return absl::OkStatus();
  }
  bool jobs_loaded_ ABSL_GUARDED_BY(jobs_mu_) = false;
  // PostgreSQL: the projects whose jobs are kept below, each with the lease
  // epoch it was read at. Only the lease holder writes a project's jobs
  // (every such write is fenced), so what this node read and wrote at one
  // epoch is the table; at another epoch, or unfenced, it is read again.
  std::map<std::string, int64_t> jobs_epoch_ ABSL_GUARDED_BY(jobs_mu_);
  // The calling thread's fence epoch when it is `project`'s (else -1).
  static int64_t FenceEpochOf(const std::string& project);
  void DropJobsLocked(const std::string& project) ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu_);
  std::map<std::string, std::map<JobKey, JobRecord>> jobs_by_project_ ABSL_GUARDED_BY(jobs_mu_);
  std::map<std::string, std::pair<std::string, JobKey>> job_at_ ABSL_GUARDED_BY(jobs_mu_);  // uuid -> (project, key)
  // The high-water mark: the stamp of the newest commit (set inside it,
  // written out after it) and the file it is written to (-1: none).
  ChangeSignal events_signal_;  // notified after each commit that wrote events
  HighWater pending_stamp_;
  int mark_fd_ = -1;
  std::string mark_path_;
  bool mark_failed_ = false;
  std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);
  const Clock* clock_;
  // Set once at start (SetSecretCodec); read by writers under mu_ and by
  // ReadMetaRow on either connection.
  std::atomic<const SecretCodec*> codec_{nullptr};
  absl::Mutex reader_mu_;
  std::unique_ptr<Database> reader_ ABSL_GUARDED_BY(reader_mu_);  // null for a store in memory
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_SQL_STORE_H_
