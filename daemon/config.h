// mariposad's configuration (issue 34): every flag once, in one table, from
// which the command line and the --config file are read and --help is
// written; and the checks of the values, a pure function of them (and of the
// host name and SAPI metadata the caller read), tested by a table in
// config_test.cc. daemon/main.cc only gathers and acts.
#ifndef MARIPOSA_DAEMON_CONFIG_H_
#define MARIPOSA_DAEMON_CONFIG_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "convergence/triton/endpoints.h"
#include "daemon/peers.h"

namespace mariposa {

// Every flag's value as given (defaults as documented).
struct DaemonFlags {
  std::string listen = "127.0.0.1:7740", socket_path = "default", data_dir = "/var/lib/mariposa", addr_file;
  std::string tls_cert, tls_key, tls_client_ca, secrets_key, backup_dir, backup_interval = "1h", backup_keep = "24";
  std::string standby_listen, on_init_failure = "exit", max_agents = "256";
  std::string store_spec, node_name, advertise, lease_ttl = "10s";
  std::string owner, admin_owner, network, resync = "5s", backoff_cap = "2m", watch = "on", relist = "5m", audit = "10s";
  std::string image_source_url, image_channel = "release", max_jobs = "64", max_jobs_project = "32", parallel_syncs = "16";
  std::string health_lease = "10s", metrics_listen, http_listen, cns_ttl = "0s";
  std::string datacenter, peers, peer_tokens, peer_ca, peer_cert, peer_key, peer_interval = "5s";
  bool insecure_listen = false, standby = false, init = false, accept_store_loss = false;
  bool embedded_health = false, remote_agents = false, health_loopback = false;
  bool help = false;
  triton::EndpointFlags api;  // --triton, --vmapi …, --sapi-metadata, --api-timeout …
};

// One flag: its name (without --), its value's name ("" = a switch), its
// help ("" = shown with the flag before it), and where its value goes.
struct FlagSpec {
  std::string name, arg, help;
  std::function<std::string*(DaemonFlags&)> value;  // valued flags
  std::function<bool*(DaemonFlags&)> on;            // switches
  bool listed = true;                               // in --help (per-API timeouts are named in one line)
};
const std::vector<FlagSpec>& DaemonFlagSpecs();

// --help, written from the table.
std::string DaemonUsage();

// The command line (after --config was expanded into it; `from_file`: how
// many of `args` came from the file, for messages). INVALID_ARGUMENT names
// an unknown or incomplete argument.
absl::StatusOr<DaemonFlags> ParseDaemonArgs(const std::vector<std::string>& args, int from_file = 0);

// The checked, typed configuration.
struct DaemonConfig {
  DaemonFlags flags;  // node_name filled in
  absl::Duration resync, health_lease, backoff_cap, backup_interval, lease_ttl, relist, audit, cns_ttl;
  absl::Duration peer_interval;
  std::vector<PeerSpec> peers;  // the other data centers' mariposads (daemon/peers.h)
  bool watch = true;  // VMAPI's change feed (convergence/triton/vm_feed.h)
  int max_jobs = 0, max_jobs_per_project = 0, parallel_syncs = 0, max_agents = 0, backup_keep = 0;
  std::map<std::string, triton::ApiEndpoint> endpoints;  // each API ("" urls: goal state only)
  std::string triton_url;  // VMAPI's address: "" without a data center
  bool tls = false, postgres = false;
};

// Checks every value against the others; INVALID_ARGUMENT says which flag
// and how to fix it. `hostname` is the default --node; `sapi` the metadata
// --sapi-metadata named (read by the caller).
absl::StatusOr<DaemonConfig> CheckDaemonFlags(DaemonFlags flags, const std::map<std::string, std::string>& sapi,
                                              const std::string& hostname);

}  // namespace mariposa

#endif  // MARIPOSA_DAEMON_CONFIG_H_
