// The project manifest (MANIFEST.md): typed structures, the parser and
// validator, and the canonical form whose sha256 identifies a version.
// Everything here is pure and thread-safe.
#ifndef MARIPOSA_PROJECTS_MANIFEST_H_
#define MARIPOSA_PROJECTS_MANIFEST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/value.h"
#include "projects/datacenters.h"
#include "projects/fabric.h"
#include "projects/firewall.h"
#include "projects/volumes.h"

namespace mariposa {

// One located problem: "file:line:column: path: message". Line and column
// are 1-based.
struct ManifestDiagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  // field path, e.g. services.wordpress.healthchecks.http.timeout
  std::string message;
  std::string ToString() const;
};

struct HealthCheckSpec {
  std::string name;
  std::string type;  // http | https | tcp
  int port = 0;
  std::string network;
  std::string path = "/";
  std::string method = "GET";
  std::map<std::string, std::string> headers;
  std::vector<std::pair<int, int>> expect_status;  // inclusive ranges; default 200-399
  std::string expect_body;                         // regex
  bool tls_skip_verify = false;
  std::string send;
  std::string expect;  // regex
  absl::Duration interval = absl::Seconds(30);
  absl::Duration unhealthy_interval = absl::Seconds(30);
  absl::Duration timeout = absl::Seconds(10);
  int retries = 3;
  int successes = 1;
  // What a failure means (Kubernetes' readiness and liveness probes): a
  // readiness failure takes the instance out of discovery and holds
  // rollouts; a liveness failure replaces it. Both by default.
  bool readiness = true;
  bool liveness = true;
};

// Whether two services' health checks are the same in every field (a
// change rolls out: projects/diff.cc, convergence::HealthSpecFor).
bool SameChecks(const std::map<std::string, HealthCheckSpec>& a, const std::map<std::string, HealthCheckSpec>& b);

// One placement rule (RFD 36 / DOCKER-630): `key==value`, `key!=value`
// (hard), `key==~value`, `key!=~value` (soft).
struct PlacementRule {
  std::string key;
  bool equal = true;
  bool soft = false;
  std::string value;  // may hold {{ }} variables, globs (*) or /regex/
  std::string ToString() const;
};

struct ServerSelector {
  std::string select = "all";         // all | headnode | list (see `servers`)
  std::vector<std::string> servers;   // uuids or hostnames when select == "list"
  std::vector<std::string> exclude;   // "headnode", uuids or hostnames
};

// Whether a service runs to completion (scheduled, event) instead of
// continuously.
struct ServiceSpec;
bool RunsToCompletion(const ServiceSpec& s);

struct ServiceSpec {
  std::string name;
  std::string service_type = "continuous";
  std::string compute_type = "docker";  // docker | infrastructure | kvm | agent
  std::string brand;                    // as written when it names a brand: lx, joyent, bhyve, kvm
  std::string image;
  std::string package;
  std::optional<int64_t> memory_bytes;  // resources.memory
  std::optional<int64_t> disk_bytes;    // resources.disk
  std::optional<double> cpu;            // resources.cpu
  int64_t count = 1;                    // 0 for agents (one per selected server)
  std::map<std::string, std::string> tags;
  std::vector<PlacementRule> placement;
  std::vector<int> ports;
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> mdata;
  std::string command;
  std::map<std::string, HealthCheckSpec> healthchecks;
  // NAPI networks or pools by name or uuid, one NIC each, the first primary;
  // the project's networks when none are given; empty: the daemon's --network.
  std::vector<std::string> networks;
  int start_parallelism = 1;
  absl::Duration start_window = absl::Seconds(60);
  std::vector<std::string> restart_condition = {"on-cn-restart", "on-failure"};
  int restart_max_attempts = 3;
  absl::Duration restart_window = absl::Seconds(60);
  absl::Duration stop_timeout = absl::Seconds(30);
  // How long an instance is out of discovery (triton.cns.status=down)
  // before it is stopped or deleted, when its service has CNS names. Unset:
  // twice the CNS TTL mariposad is told (--cns-ttl), so that a client that
  // resolved the service just before has resolved it again; 0 without.
  std::optional<absl::Duration> stop_drain;
  std::string preserve_stopped = "never";  // never | on-failure | always
  int update_rolling = 1;
  int update_canary = 0;
  int update_max_surge = 1;
  bool update_auto_rollback = false;
  std::string update_on_change = "rollout";  // rollout | manual: what an apply changing the spec does
  // rollout | manual: what a change to a meta value the service's instances
  // use does (manual: `status` names them; `reprovision` rolls them).
  std::string update_on_meta_change = "manual";
  // replace: new instances are created and old ones removed (max_surge);
  // reprovision: VMAPI reprovisions each instance in place (same uuid, NICs
  // and delegate dataset, new image and metadata), `rolling` at a time.
  std::string update_strategy = "replace";
  // Nomad's update block. An instance of the new spec must stay healthy for
  // min_healthy_time before it counts as ready; one not ready within
  // healthy_deadline of its creation (or reprovision) is unhealthy; a rollout
  // with no instance becoming ready for progress_deadline fails. 0 = none.
  absl::Duration update_min_healthy_time = absl::ZeroDuration();
  absl::Duration update_healthy_deadline = absl::ZeroDuration();
  absl::Duration update_progress_deadline = absl::ZeroDuration();
  // Each instance gets a ZFS dataset of its own (zones/<uuid>/data) that
  // survives a reprovision (VMAPI's delegate_dataset).
  bool delegate_dataset = false;
  std::optional<ServerSelector> servers;   // agents only
  // cns: the Triton CNS service names its instances carry (the
  // triton.cns.services tag, set in place when they change). nullopt: the
  // default, <project>-<service>; empty: none (`cns: false`). Each a DNS
  // label, with an optional :port (CNS's SRV form).
  std::optional<std::vector<std::string>> cns;
  // The project's volumes it mounts (projects/volumes.h), in the manifest's
  // order; part of the instance spec (a change rolls out).
  std::vector<VolumeMount> volumes;
  // service_type scheduled (a run at each `schedule` time) and event (a run
  // on `mariposa run`): each run creates `count` instances, waits for them
  // to end, records the outcome and removes them (docs/manifest.md "Runs").
  std::string schedule;            // cron (projects/cron.h); scheduled only
  std::string time_zone = "UTC";   // of the schedule, from the tz database
  std::string run_concurrency = "forbid";  // forbid | replace | allow: a run due while one is active
  absl::Duration run_starting_deadline = absl::ZeroDuration();  // a run this late is missed (0 = never)
  absl::Duration run_deadline = absl::ZeroDuration();           // a run this long is stopped, failed (0 = none)
  int run_keep_succeeded = 0;  // finished runs whose (stopped) instances are kept for inspection
  int run_keep_failed = 1;
  std::map<std::string, Value> reserved;  // RFD 36 keys not run yet, stored as given
};

// Triton CNS's tag of service names (comma-separated), and the names a
// service's instances carry (ServiceSpec::cns).
// A firewall rule, and the fabric, as the canonical form and the diff write them.
Value FirewallRuleValue(const FirewallRuleSpec& r);
Value FabricValue(const FabricSpec& f);
Value VolumesValue(const std::map<std::string, VolumeSpec>& volumes);

inline constexpr char kCnsServicesTag[] = "triton.cns.services";
std::vector<std::string> CnsNames(const std::string& project, const std::string& service, const ServiceSpec& s);
// The value of that tag: the names comma-separated ("" = no tag).
std::string CnsTagValue(const std::string& project, const std::string& service, const ServiceSpec& s);

// A `{{ }}` template found in the manifest, with where it was written.
struct TemplateUse {
  std::string path;
  int line = 0;
  int column = 0;
  std::string text;
};

struct Manifest {
  std::string project;
  std::string description;
  std::map<std::string, std::string> meta;  // flattened: nested maps become dotted keys
  std::map<std::string, std::vector<std::string>> deployment_groups;
  std::vector<std::string> networks;  // the default of services naming none
  std::map<std::string, ServiceSpec> services;
  std::map<std::string, FirewallRuleSpec> firewall;  // rule name -> rule (projects/firewall.h)
  std::optional<FabricSpec> fabric;                  // the project's VLAN and networks (projects/fabric.h)
  std::map<std::string, VolumeSpec> volumes;         // volume name -> volume (projects/volumes.h)
  // The top-level cns: the default CNS names of services that name none:
  // nullopt: <project>-<service>; "": none (`cns: false`); NAME:
  // <NAME>-<service>. Resolved into each such service's cns when parsed.
  std::optional<std::string> cns;
  // The data centers that run the project, in rollout order, with what each
  // changes (projects/datacenters.h). Empty: the project runs in the data
  // center of the mariposad it is applied to, as a manifest without the key
  // always has. `datacenter_rollout` is set only when the manifest gives it.
  std::vector<DataCenterSpec> datacenters;
  std::optional<DataCenterRollout> datacenter_rollout;
  std::map<std::string, Value> reserved;  // top-level RFD 36 keys not run yet
  std::vector<ManifestDiagnostic> warnings;
  std::vector<TemplateUse> templates;
};

struct ParseOptions {
  std::string filename = "manifest";
  // The CLI's -j: overrides the manifest's `project:`, which then may be absent.
  std::string project_override;
  // A text Mariposa wrote itself (a stored canonical form): parsed under the
  // canonical form's size limit instead of the manifest's.
  bool stored = false;
  // Checked while parsing; null: never cancelled.
  const Cancellation* cancel = nullptr;
};

// Parses and validates YAML or JSON. On failure `errors` holds the first
// Limits::kMaxErrorsShown problems found, each located, `total_errors` how
// many there were, and `manifest` is empty. When `options.cancel` stopped the
// work, `interrupted` holds its status and nothing else is meaningful.
struct ParseResult {
  std::optional<Manifest> manifest;
  std::vector<ManifestDiagnostic> errors;
  int64_t total_errors = 0;
  absl::Status interrupted;
};
ParseResult ParseManifest(absl::string_view text, const ParseOptions& options);

// Joins diagnostics into one INVALID_ARGUMENT status, one per line, within
// Limits::kMaxErrorMessageBytes; when some are left out it says how many
// ("first 40 of 50,000 errors"). `total` is the number found (at least
// errors.size()).
absl::Status DiagnosticsToStatus(const std::vector<ManifestDiagnostic>& errors, int64_t total = 0);

// Checks that every `{{ .meta.KEY }}` names a key in `meta_keys` (the
// project's store meta plus the manifest's defaults); located errors.
std::vector<ManifestDiagnostic> CheckMetaReferences(const Manifest& m,
                                                    const std::map<std::string, std::string>& meta,
                                                    absl::string_view filename);

// The canonical YAML form: sorted keys, aliases resolved, defaults filled,
// durations and sizes normalized. Two manifests that mean the same have the
// same canonical form whatever their comments, key order or spelling.
std::string CanonicalYaml(const Manifest& m);
// sha256 of CanonicalYaml.
std::string CanonicalHash(const Manifest& m);

// The canonical spec of one service as JSON, and the hash of the part that
// goes into an instance (image, package, resources, environment, mdata,
// command, ports, tags, type): a change there means reprovisioning.
std::string ServiceSpecJson(const ServiceSpec& s);
// The canonical spec as a document tree (what ServiceSpecJson prints).
Value ServiceSpecValue(const ServiceSpec& s);
std::string InstanceSpecHash(const ServiceSpec& s);

// A manifest with its derived forms, each computed once.
struct CompiledManifest {
  Manifest manifest;
  std::string canonical;                             // CanonicalYaml
  std::string hash;                                  // its sha256
  std::map<std::string, std::string> spec_json;      // service -> ServiceSpecJson
  std::map<std::string, std::string> instance_hash;  // service -> InstanceSpecHash
  // A manifest that lists data centers: `manifest` and the per-service forms
  // are data center `datacenter`'s (ForDataCenter), while `canonical` and
  // `hash` are the whole document's, the same in every data center, and
  // `document` is that document. Null for a manifest that lists none.
  std::shared_ptr<const Manifest> document;
  std::string datacenter;
};
// `datacenter`: the data center the manifest is compiled for (a mariposad's
// --datacenter); it matters only to a manifest that lists data centers.
// `tree`, when given, gets the document tree the services' forms were
// written from (several times the canonical text's size: kept by the caller
// for one diff, not with the compiled forms, which are cached).
CompiledManifest Compile(Manifest m, absl::string_view datacenter = {}, Value* tree = nullptr);
// In such a tree, a service's ServiceSpecValue (null when it has none).
const Value* ServiceSpecTree(const Value& tree, absl::string_view service);

// The manifest as data center `dc` runs it: each service with dc's
// overrides applied. A manifest that lists data centers but not `dc` runs
// no instance there (every count 0). A manifest that lists none is
// returned as it is.
Manifest ForDataCenter(Manifest m, absl::string_view dc);
// True when `m` lists no data centers, or lists `dc`.
bool RunsInDataCenter(const Manifest& m, absl::string_view dc);
// The canonical forms of `datacenters:` and `datacenter_rollout:`.
Value DataCentersValue(const std::vector<DataCenterSpec>& dcs);
Value DataCenterRolloutValue(const DataCenterRollout& r);

// Durations: "500ms", "10s", "5m", "1h", "1m30s"; a bare integer is seconds.
absl::StatusOr<absl::Duration> ParseManifestDuration(absl::string_view s);
// Sizes: "512m", "4g", "100k", "1t" (binary units, optional "b"/"ib"); a bare
// integer is MiB.
absl::StatusOr<int64_t> ParseManifestSize(absl::string_view s);
std::string FormatManifestDuration(absl::Duration d);
// The largest binary unit that divides the size exactly ("512m", "4g").
std::string FormatManifestSize(int64_t bytes);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_MANIFEST_H_
