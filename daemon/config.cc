#include "daemon/config.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "auth/listener.h"
#include "common/ids.h"
#include "projects/sql_store.h"

namespace mariposa {
namespace {

constexpr char kSynopsis[] = R"(usage: mariposad [--config FILE] [--listen ADDR] [--socket PATH] [--data-dir DIR] [--addr-file FILE] [--init] [--accept-store-loss]
                 [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--insecure-listen]
                 [--secrets-key FILE] [--backup-dir DIR] [--backup-interval DURATION] [--backup-keep N]
                 [--standby [--standby-listen ADDR]] [--on-init-failure exit|serve] [--max-health-agents N]
                 [--triton URL | --vmapi URL … | --sapi-metadata FILE] [--owner UUID --network UUID [--admin-owner UUID] [--resync DURATION]
                  [--max-jobs N] [--max-jobs-per-project N] [--parallel-syncs N] [--embedded-health] [--health-agents]
                  [--health-loopback]
                  [--health-lease DURATION] [--image-source URL [--image-channel NAME]]]
                 [--metrics-listen HOST:PORT] [--store postgresql://… [--node NAME] [--advertise HOST:PORT]
                 [--lease-ttl DURATION]]

The Mariposa controller: gRPC API, SQLite store (or PostgreSQL, several nodes).
)";

std::vector<FlagSpec> BuildSpecs() {
  std::vector<FlagSpec> specs = {
      {"listen", "ADDR", "address to serve on (default 127.0.0.1:7740; port 0 picks a free port; unix:/path for a unix socket). Callers on loopback are identified by the uid owning their socket. Another address needs TLS (--tls-cert) or --insecure-listen", [](DaemonFlags& f) { return &f.listen; }, nullptr},
      {"socket", "PATH", "also serve on this Unix socket, callers identified by SO_PEERCRED: root and mariposad's own user are admin (default DATA_DIR/mariposad.sock; \"none\": no socket)", [](DaemonFlags& f) { return &f.socket_path; }, nullptr},
      {"tls-cert", "FILE", "serve --listen with TLS (PEM server certificate and key)", [](DaemonFlags& f) { return &f.tls_cert; }, nullptr},
      {"tls-key", "FILE", "", [](DaemonFlags& f) { return &f.tls_key; }, nullptr},
      {"tls-client-ca", "FILE", "verify client certificates against this CA (PEM); a verified certificate is the caller \"cert:CN\". Callers without one present a token (`mariposa admin token`)", [](DaemonFlags& f) { return &f.tls_client_ca; }, nullptr},
      {"insecure-listen", "", "allow --listen on a non-loopback address without TLS: tokens cross the network in clear; said at start and in `mariposa admin status`", nullptr, [](DaemonFlags& f) { return &f.insecure_listen; }},
      {"secrets-key", "FILE", "the AES-256 key sealing secret meta values (default DATA_DIR/secrets.key, created 0600 if missing; keep it apart from backups)", [](DaemonFlags& f) { return &f.secrets_key; }, nullptr},
      {"backup-dir", "DIR", "where backups are written: `mariposa admin backup NAME` and the scheduled ones (default DATA_DIR/backups, 0700; files 0600)", [](DaemonFlags& f) { return &f.backup_dir; }, nullptr},
      {"backup-interval", "DURATION", "write a scheduled backup mariposa-YYYYMMDDTHHMMSSZ.db this often, the first at start when the newest is older (default 1h; 0 = none)", [](DaemonFlags& f) { return &f.backup_interval; }, nullptr},
      {"backup-keep", "N", "scheduled backups kept, the newest (default 24); others in the directory are never deleted", [](DaemonFlags& f) { return &f.backup_keep; }, nullptr},
      {"standby", "", "when another mariposad holds the data dir, wait for it instead of exiting, and take over (with these flags) when it stops or dies. Waiting, it answers `admin status` and ping on --standby-listen and DATA_DIR/mariposad-standby.sock; every other call is UNAVAILABLE naming the active one", nullptr, [](DaemonFlags& f) { return &f.standby; }},
      {"standby-listen", "ADDR", "where a waiting standby answers (loopback; port 0 picks one)", [](DaemonFlags& f) { return &f.standby_listen; }, nullptr},
      {"on-init-failure", "exit|serve", "when the store or the secrets key cannot be opened: exit 1 (default), or stay up in state initfail answering `admin status` with the error, its reason, fix and impact", [](DaemonFlags& f) { return &f.on_init_failure; }, nullptr},
      {"max-health-agents", "N", "health agents connected at once (default 256)", [](DaemonFlags& f) { return &f.max_agents; }, nullptr},
      {"data-dir", "DIR", "where the store lives (default /var/lib/mariposa); created if missing; one mariposad per directory", [](DaemonFlags& f) { return &f.data_dir; }, nullptr},
      {"store", "URI", "keep the store in PostgreSQL instead (postgresql://USER@HOST: PORT/DB; several hosts as HOST1:P1,HOST2:P2 with ?target_session_attrs=read-write): several mariposad nodes on one database share the projects, each project run by one node holding its lease (docs/operations.md, \"Several nodes\"). Default: sqlite:DATA_DIR/mariposa.db", [](DaemonFlags& f) { return &f.store_spec; }, nullptr},
      {"node", "NAME", "this node's name among the nodes of one database (default: the host name); unique", [](DaemonFlags& f) { return &f.node_name; }, nullptr},
      {"advertise", "HOST:PORT", "where the other nodes' users and health agents reach this node (default: the --listen address, with the host name for 0.0.0.0 or [::]); shown by `mariposa nodes`", [](DaemonFlags& f) { return &f.advertise; }, nullptr},
      {"lease-ttl", "DURATION", "a project lease's life from its last renewal (default 10s): a node that dies has its projects taken over after about this long; one cut off from the database stops acting before it runs out", [](DaemonFlags& f) { return &f.lease_ttl; }, nullptr},
      {"init", "", "accept a missing or empty store in a data dir that held one (start over with no projects); without it such a store is refused, as is any store that fails verification", nullptr, [](DaemonFlags& f) { return &f.init; }},
      {"accept-store-loss", "", "start on a store whose write-ahead log is damaged, or that is older than its high-water mark, keeping what SQLite recovers (copies of the damaged files go to DATA_DIR/damaged-STAMP/; the loss is logged and is an event); only when there is no backup to restore", nullptr, [](DaemonFlags& f) { return &f.accept_store_loss; }},
      {"addr-file", "FILE", "write the address actually bound (host:port) to FILE once serving, and on a second line the /metrics address when served; for scripts and tests", [](DaemonFlags& f) { return &f.addr_file; }, nullptr},
      {"triton", "URL", "converge projects against this Triton, every API at one base URL (as tritonsim serves them); without it, or the flags below, mariposad stores goal state only", [](DaemonFlags& f) { return &f.api.triton; }, nullptr},
      {"vmapi", "URL", "each API at its own address (a data center: http://vmapi.DC.DOMAIN, …; wfapi, the workflow API IMGAPI's jobs are followed on, defaults to IMGAPI's); they win over --triton for that API", [](DaemonFlags& f) { return &f.api.url["vmapi"]; }, nullptr},
      {"cnapi", "URL", "", [](DaemonFlags& f) { return &f.api.url["cnapi"]; }, nullptr},
      {"imgapi", "URL", "", [](DaemonFlags& f) { return &f.api.url["imgapi"]; }, nullptr},
      {"papi", "URL", "", [](DaemonFlags& f) { return &f.api.url["papi"]; }, nullptr},
      {"napi", "URL", "", [](DaemonFlags& f) { return &f.api.url["napi"]; }, nullptr},
      {"wfapi", "URL", "", [](DaemonFlags& f) { return &f.api.url["wfapi"]; }, nullptr},
      {"fwapi", "URL", "FWAPI, for manifests' firewall rules (optional: without it, from --triton or FWAPI_SERVICE, firewall rules are not applied and status says so)", [](DaemonFlags& f) { return &f.api.url["fwapi"]; }, nullptr},
      {"volapi", "URL", "VOLAPI, for manifests' volumes (optional: without it, from --triton or VOLAPI_SERVICE, volumes are not made and the services that mount them wait; status says so)", [](DaemonFlags& f) { return &f.api.url["volapi"]; }, nullptr},
      {"mahi", "URL", "Triton's auth cache (mahi: MAHI_SERVICE, or --triton), where the SSH keys and roles of Triton accounts signing HTTP Signature requests are looked up (docs/security.md); without it such requests are refused", [](DaemonFlags& f) { return &f.api.url["mahi"]; }, nullptr},
      {"sapi-metadata", "FILE", "each API's host from a core zone's SAPI metadata (JSON: VMAPI_SERVICE, CNAPI_SERVICE, IMGAPI_SERVICE, PAPI_SERVICE, NAPI_SERVICE, WORKFLOW_SERVICE, and FWAPI_SERVICE, VOLAPI_SERVICE if any); a --vmapi … flag wins", [](DaemonFlags& f) { return &f.api.sapi_metadata_file; }, nullptr},
      {"api-timeout", "DURATION", "every API's request timeout (default 10s) and requests in flight at once (default 64); --vmapi-timeout, --vmapi-connections, … for one API", [](DaemonFlags& f) { return &f.api.timeout; }, nullptr},
      {"api-connections", "N", "", [](DaemonFlags& f) { return &f.api.connections; }, nullptr},
      {"config", "FILE", "flags from a YAML file, one `flag: value` per line without the leading -- (`listen: 127.0.0.1:7740`, `embedded-health: true`); flags on the command line win (deploy/systemd/mariposad.yaml)", nullptr, nullptr},
      {"owner", "UUID", "the Triton account of projects created without one (with --triton); `project create --owner` names another", [](DaemonFlags& f) { return &f.owner; }, nullptr},
      {"admin-owner", "UUID", "Triton's admin account (ufds_admin_uuid), owner of the core zones (compute_type: core); without it core services are refused", [](DaemonFlags& f) { return &f.admin_owner; }, nullptr},
      {"network", "UUID", "network every instance joins (with --triton)", [](DaemonFlags& f) { return &f.network; }, nullptr},
      {"resync", "DURATION", "how often every project is re-checked (default 5s)", [](DaemonFlags& f) { return &f.resync; }, nullptr},
      {"watch", "on|off", "watch VMAPI's change feed and read only what changes (default on); off, or a VMAPI without the feed: every sync lists the project's VMs", [](DaemonFlags& f) { return &f.watch; }, nullptr},
      {"cns-ttl", "DURATION", "the TTL of CNS's records in this data center (Triton's CNS: 30s; default 0s = no CNS): an instance of a service with CNS names is kept out of discovery for its stop.drain (default twice this) before it is stopped or removed", [](DaemonFlags& f) { return &f.cns_ttl; }, nullptr},
      {"datacenter", "NAME", "this data center's name (a DNS label, as Triton names them: us-east-1); its peers know it by it (docs/operations.md, Several data centers)", [](DaemonFlags& f) { return &f.datacenter; }, nullptr},
      {"peers", "NAME=HOST:PORT,…", "the mariposads of the other data centers, each asked for its status every --peer-interval (`mariposa datacenters` shows them)", [](DaemonFlags& f) { return &f.peers; }, nullptr},
      {"peer-tokens", "NAME=FILE,…", "the token this data center presents to each peer (made there: `mariposa admin token create --name peer-NAME --role viewer --all-projects`)", [](DaemonFlags& f) { return &f.peer_tokens; }, nullptr},
      {"peer-ca", "FILE", "PEM CA that signed the peers' TLS certificates: peers are reached over TLS and verified (without it: plaintext, for loopback and tests only)", [](DaemonFlags& f) { return &f.peer_ca; }, nullptr},
      {"peer-cert", "FILE", "a client certificate this data center presents to its peers (with --peer-key), instead of or besides a token", [](DaemonFlags& f) { return &f.peer_cert; }, nullptr},
      {"peer-key", "FILE", "", [](DaemonFlags& f) { return &f.peer_key; }, nullptr},
      {"peer-interval", "DURATION", "how often each peer is asked (default 5s; each question waits at most 3s)", [](DaemonFlags& f) { return &f.peer_interval; }, nullptr},
      {"relist", "DURATION", "while watching, each project's VMs are still listed in full this often (default 5m)", [](DaemonFlags& f) { return &f.relist; }, nullptr},
      {"audit", "DURATION", "while watching, each project's VMs are checked against a digest (uuid, state, last_modified) this often, to find what the change feed missed (default 10s; 0 = never)", [](DaemonFlags& f) { return &f.audit; }, nullptr},
      {"backoff-cap", "DURATION", "the longest wait after failed creates, installs or imports before the next attempt (default 2m; the wait starts at 1s and doubles)", [](DaemonFlags& f) { return &f.backoff_cap; }, nullptr},
      {"image-source", "URL", "an IMGAPI to import images from when the data center's IMGAPI lacks one a manifest names (like sdcadm's updates.tritondatacenter.com; tritonsim serves one at <its URL>/updates); without it such images are refused", [](DaemonFlags& f) { return &f.image_source_url; }, nullptr},
      {"image-channel", "NAME", "the source's channel (default release; \"\" = every channel)", [](DaemonFlags& f) { return &f.image_channel; }, nullptr},
      {"max-jobs", "N", "Triton jobs in flight, all projects together (default 64)", [](DaemonFlags& f) { return &f.max_jobs; }, nullptr},
      {"max-jobs-per-project", "N", "Triton jobs in flight for one project (default 32)", [](DaemonFlags& f) { return &f.max_jobs_project; }, nullptr},
      {"parallel-syncs", "N", "projects synced at the same time (default 16); each sync's Triton requests are bounded by --max-jobs besides", [](DaemonFlags& f) { return &f.parallel_syncs; }, nullptr},
      {"embedded-health", "", "run a health agent in this process (mariposa-health agents may connect besides; checks are sharded over all of them). Unhealthy instances are replaced, rollouts wait for healthy.", nullptr, [](DaemonFlags& f) { return &f.embedded_health; }},
      {"health-agents", "", "run health checks on mariposa-health agents only (they connect to this address). Without this or --embedded-health no check runs: health stays unknown and instances are ready once they have run start.window", nullptr, [](DaemonFlags& f) { return &f.remote_agents; }},
      {"health-lease", "DURATION", "a health agent silent this long is dropped and its checks move to the others (default 10s)", [](DaemonFlags& f) { return &f.health_lease; }, nullptr},
      {"health-loopback", "", "check an instance's 10.a.b.c address at 127.a.b.c, where tritonsim --listen-vms answers for it", nullptr, [](DaemonFlags& f) { return &f.health_loopback; }},
      {"metrics-listen", "HOST:PORT", "serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free port); off unless given", [](DaemonFlags& f) { return &f.metrics_listen; }, nullptr},
      {"http-listen", "HOST:PORT", "serve the HTTP/JSON API and the web console at http://HOST:PORT/ (https:// with --tls-cert; port 0 picks a free port; docs/http-api.md); off unless given", [](DaemonFlags& f) { return &f.http_listen; }, nullptr},
      {"help", "", "this text", nullptr, nullptr},
  };
  // Each API's own timeout and connection limit (named in --api-timeout's help).
  for (const std::string& api : triton::ApiNames()) {
    specs.push_back({api + "-timeout", "DURATION", "", [api](DaemonFlags& f) { return &f.api.api_timeout[api]; },
                     nullptr, false});
    specs.push_back({api + "-connections", "N", "", [api](DaemonFlags& f) { return &f.api.api_connections[api]; },
                     nullptr, false});
  }
  return specs;
}

// `text` in lines of at most `width` columns, each indented by `indent`.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
  return out;
}

}  // namespace

const std::vector<FlagSpec>& DaemonFlagSpecs() {
  static const std::vector<FlagSpec> kSpecs = BuildSpecs();
  return kSpecs;
}

std::string DaemonUsage() {
  constexpr size_t kIndent = 20, kWidth = 86;
  std::string out = absl::StrCat(kSynopsis, "\n");
  const auto& specs = DaemonFlagSpecs();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].listed) continue;
    // Flags without help of their own are shown with the one before.
    std::string names = absl::StrCat("--", specs[i].name, specs[i].arg.empty() ? "" : " ", specs[i].arg);
    size_t j = i + 1;
    for (; j < specs.size() && specs[j].listed && specs[j].help.empty(); ++j) {
      absl::StrAppend(&names, ", --", specs[j].name, specs[j].arg.empty() ? "" : " ", specs[j].arg);
    }
    if (2 + names.size() + 1 <= kIndent) {
      std::string help = Wrap(specs[i].help, kIndent, kWidth);
      absl::StrAppend(&out, "  ", names, std::string(kIndent - 2 - names.size(), ' '), help.substr(kIndent));
    } else {
      absl::StrAppend(&out, "  ", names, "\n", Wrap(specs[i].help, kIndent, kWidth));
    }
    i = j - 1;
  }
  absl::StrAppend(&out, "\nStops gracefully on SIGTERM or SIGINT.\n");
  return out;
}

absl::StatusOr<DaemonFlags> ParseDaemonArgs(const std::vector<std::string>& args, int from_file) {
  DaemonFlags f;
  std::map<std::string, const FlagSpec*> by_name;
  for (const FlagSpec& s : DaemonFlagSpecs()) by_name[s.name] = &s;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto unknown = [&] {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument \"", a, "\"",
                                                     static_cast<int>(i) < from_file ? " (from --config)" : ""));
    };
    if (a == "--help" || a == "-h") {
      f.help = true;
      continue;
    }
    if (!absl::StartsWith(a, "--")) return unknown();
    size_t eq = a.find('=');
    std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    auto it = by_name.find(name);
    if (it == by_name.end() || (!it->second->value && !it->second->on)) return unknown();
    const FlagSpec& s = *it->second;
    if (s.on) {
      if (eq != std::string::npos) return unknown();
      *s.on(f) = true;
    } else if (eq != std::string::npos) {
      *s.value(f) = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      *s.value(f) = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value (", s.arg, ")"));
    }
  }
  return f;
}

absl::StatusOr<DaemonConfig> CheckDaemonFlags(DaemonFlags flags, const std::map<std::string, std::string>& sapi,
                                              const std::string& hostname) {
  DaemonConfig c;
  const DaemonFlags& f = flags;
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (!absl::ParseDuration(f.resync, &c.resync) || c.resync <= absl::ZeroDuration()) {
    return bad("--resync \"", f.resync, "\" is not a duration (e.g. 5s)");
  }
  auto endpoints = triton::ResolveEndpoints(f.api, sapi);
  if (!endpoints.ok()) return endpoints.status();
  c.endpoints = *std::move(endpoints);
  c.triton_url = c.endpoints.at("vmapi").url;
  if ((f.embedded_health || f.health_loopback || f.remote_agents) && c.triton_url.empty()) {
    return bad("--embedded-health, --health-agents and --health-loopback need --triton (there is nothing to check without it)");
  }
  if (!absl::ParseDuration(f.health_lease, &c.health_lease) || c.health_lease < absl::Milliseconds(300)) {
    return bad("--health-lease \"", f.health_lease, "\" is not a duration of at least 300ms (e.g. 10s)");
  }
  if (!absl::SimpleAtoi(f.max_jobs, &c.max_jobs) || c.max_jobs < 1) {
    return bad("--max-jobs \"", f.max_jobs, "\" must be a number of at least 1");
  }
  if (!absl::SimpleAtoi(f.max_jobs_project, &c.max_jobs_per_project) || c.max_jobs_per_project < 1) {
    return bad("--max-jobs-per-project \"", f.max_jobs_project, "\" must be a number of at least 1");
  }
  if (!absl::SimpleAtoi(f.parallel_syncs, &c.parallel_syncs) || c.parallel_syncs < 1 || c.parallel_syncs > 256) {
    return bad("--parallel-syncs \"", f.parallel_syncs, "\" must be a number from 1 to 256");
  }
  if (!f.image_source_url.empty() && c.triton_url.empty()) return bad("--image-source needs --triton");
  if (f.watch != "on" && f.watch != "off") return bad("--watch \"", f.watch, "\" must be on or off");
  c.watch = f.watch == "on";
  if (!absl::ParseDuration(f.cns_ttl, &c.cns_ttl) || c.cns_ttl < absl::ZeroDuration() || c.cns_ttl > absl::Hours(1)) {
    return bad("--cns-ttl \"", f.cns_ttl, "\" is not a duration from 0s to 1h (Triton's CNS: 30s)");
  }
  if (!f.datacenter.empty()) {
    if (absl::Status st = CheckDataCenterName("--datacenter", f.datacenter); !st.ok()) return st;
  }
  {
    auto peers = ParsePeers(f.datacenter, f.peers, f.peer_tokens);
    if (!peers.ok()) return peers.status();
    c.peers = *std::move(peers);
  }
  if (!absl::ParseDuration(f.peer_interval, &c.peer_interval) || c.peer_interval < absl::Seconds(1) ||
      c.peer_interval > absl::Hours(1)) {
    return bad("--peer-interval \"", f.peer_interval, "\" is not a duration from 1s to 1h (e.g. 5s)");
  }
  if (f.peer_cert.empty() != f.peer_key.empty()) return bad("--peer-cert and --peer-key go together");
  if ((!f.peer_ca.empty() || !f.peer_cert.empty()) && c.peers.empty()) {
    return bad("--peer-ca and --peer-cert are for --peers; give the peers too, or drop them");
  }
  if (!absl::ParseDuration(f.relist, &c.relist) || c.relist < absl::Seconds(1)) {
    return bad("--relist \"", f.relist, "\" is not a duration of at least 1s (e.g. 5m)");
  }
  if (!absl::ParseDuration(f.audit, &c.audit) || (c.audit != absl::ZeroDuration() && c.audit < absl::Seconds(1))) {
    return bad("--audit \"", f.audit, "\" is not 0 or a duration of at least 1s (e.g. 10s)");
  }
  if (!absl::ParseDuration(f.backoff_cap, &c.backoff_cap) || c.backoff_cap < absl::Seconds(1)) {
    return bad("--backoff-cap \"", f.backoff_cap, "\" is not a duration of at least 1s (e.g. 2m)");
  }
  if (!c.triton_url.empty() && (!IsUuid(f.owner) || !IsUuid(f.network))) {
    return bad("--triton needs --owner UUID and --network UUID");
  }
  if (!absl::SimpleAtoi(f.max_agents, &c.max_agents) || c.max_agents < 1) {
    return bad("--max-health-agents \"", f.max_agents, "\" must be a number of at least 1");
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) return bad("--tls-cert and --tls-key go together");
  if (!f.tls_client_ca.empty() && f.tls_cert.empty()) return bad("--tls-client-ca needs --tls-cert and --tls-key");
  c.tls = !f.tls_cert.empty();
  if (c.tls && absl::StartsWith(f.listen, "unix:")) return bad("TLS is for TCP: --listen must be HOST:PORT with --tls-cert");
  if (!c.tls && !auth::IsLocalAddress(f.listen) && !f.insecure_listen) {
    return bad("--listen ", f.listen,
               " is not a loopback address and there is no TLS: anyone on the network could read "
               "tokens and secrets in transit. Give --tls-cert and --tls-key (docs/security.md), listen on 127.0.0.1, "
               "or accept the risk with --insecure-listen");
  }
  if (!f.http_listen.empty() && !c.tls && !auth::IsLocalAddress(f.http_listen) && !f.insecure_listen) {
    return bad("--http-listen ", f.http_listen,
               " is not a loopback address and there is no TLS: anyone on the network could read tokens and secrets "
               "in transit. Give --tls-cert and --tls-key (docs/security.md), listen on 127.0.0.1, or accept the "
               "risk with --insecure-listen");
  }
  if (f.embedded_health && f.socket_path == "none" && (c.tls || !auth::IsLocalAddress(f.listen))) {
    return bad("--embedded-health connects to mariposad over a local listener: keep --socket or listen on loopback");
  }
  if (!absl::ParseDuration(f.backup_interval, &c.backup_interval) || c.backup_interval < absl::ZeroDuration() ||
      (c.backup_interval > absl::ZeroDuration() && c.backup_interval < absl::Seconds(1))) {
    return bad("--backup-interval \"", f.backup_interval, "\" is not a duration of at least 1s, or 0 for none (e.g. 1h)");
  }
  if (!absl::SimpleAtoi(f.backup_keep, &c.backup_keep) || c.backup_keep < 1) {
    return bad("--backup-keep \"", f.backup_keep, "\" must be a number of at least 1");
  }
  if (f.on_init_failure != "exit" && f.on_init_failure != "serve") {
    return bad("--on-init-failure \"", f.on_init_failure, "\" must be exit or serve");
  }
  if (!f.standby_listen.empty() && !f.standby) return bad("--standby-listen needs --standby");
  if (!f.standby_listen.empty() && !auth::IsLocalAddress(f.standby_listen)) {
    return bad("--standby-listen ", f.standby_listen, " must be a loopback address or unix:PATH");
  }
  if (!f.admin_owner.empty() && !IsUuid(f.admin_owner)) return bad("--admin-owner \"", f.admin_owner, "\" is not a uuid");
  // --store: SQLite in the data dir (the default) or PostgreSQL, shared by
  // every node (--node names this one; the project leases last --lease-ttl).
  c.postgres = SqlProjectStore::IsPostgresSpec(f.store_spec);
  if (!f.store_spec.empty() && !c.postgres && f.store_spec != "sqlite:" + f.data_dir + "/mariposa.db") {
    return bad("--store must be a PostgreSQL URI (postgresql://USER@HOST:PORT/DB) or sqlite:", f.data_dir,
               "/mariposa.db (a SQLite store lives in --data-dir)");
  }
  if (!absl::ParseDuration(f.lease_ttl, &c.lease_ttl) || c.lease_ttl < absl::Seconds(2)) {
    return bad("--lease-ttl \"", f.lease_ttl, "\" is not a duration of at least 2s (e.g. 10s)");
  }
  if (flags.node_name.empty()) flags.node_name = hostname;
  if (flags.node_name.empty() || flags.node_name.size() > 128) return bad("--node must name this node (1-128 characters)");
  if (!f.advertise.empty() && (f.advertise.rfind(':') == std::string::npos || f.advertise.rfind(':') + 1 == f.advertise.size())) {
    return bad("--advertise \"", f.advertise, "\" is not HOST:PORT (where the other nodes reach this one)");
  }
  c.flags = std::move(flags);
  return c;
}

}  // namespace mariposa
