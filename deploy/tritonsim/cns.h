// tritonsim's CNS (--cns-listen): the service and instance records
// triton-cns's updater builds from VMAPI, served over DNS (UDP) with a TTL
// and the delay a real CNS has between a VM's change and its records.
//
// The records follow triton-cns (lib/flag-filter.js, lib/vm-to-zones.js):
//   <service>.svc.<owner uuid>.<zone>   A: every VM of the owner whose tag
//       triton.cns.services names the service (before any ':'), that runs,
//       on a server that is up, whose customer_metadata triton.cns.status is
//       absent or "up", without the tag triton.cns.disable, of an account
//       with CNS enabled;
//   <uuid>.inst.<owner uuid>.<zone>, <alias>.inst.<owner uuid>.<zone>
//       A: the VM's addresses while it is not destroyed or failed, the tag
//       triton.cns.disable absent, its account enabled (a stopped VM keeps
//       its instance records).
// Names are matched without case; any other name in the zone is NXDOMAIN,
// a name outside it REFUSED.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_CNS_H_
#define MARIPOSA_DEPLOY_TRITONSIM_CNS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "deploy/tritonsim/datacenter.h"

namespace tritonsim {

// What CNS reads of a VM.
struct CnsVm {
  std::string uuid, alias, owner, state;
  bool server_down = false;
  std::string services_tag;          // triton.cns.services ("" = none)
  bool disabled = false;             // the tag triton.cns.disable
  std::optional<std::string> status; // customer_metadata triton.cns.status
  std::vector<std::string> ips;      // every NIC's address
};

// Lower-cased name -> its A records (IPv4 text), by the rules above.
using CnsRecords = std::map<std::string, std::vector<std::string>>;
CnsRecords BuildCnsRecords(const std::vector<CnsVm>& vms, const std::set<std::string>& disabled_accounts,
                           const std::string& zone);

// One DNS question (RFC 1035 4.1.1, 4.1.2): the first of the message's.
struct DnsQuery {
  uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;  // lower-cased, without the final dot
  uint16_t qtype = 0, qclass = 0;
  size_t question_end = 0;  // where the question ends in the message
};
// nullopt: not a query this server answers (a response, another opcode, no
// question, or a message that does not parse); it is dropped.
std::optional<DnsQuery> ParseDnsQuery(const std::string& message);
// The answer to `q` (its question echoed from `message`): the A records
// `ips` with `ttl`, or an error code (3 NXDOMAIN, 5 REFUSED) with none.
std::string BuildDnsAnswer(const std::string& message, const DnsQuery& q, const std::vector<std::string>& ips,
                           uint32_t ttl, int rcode);

struct CnsOptions {
  std::string zone = "dc1.cns.tritonsim.test";
  int ttl_s = 30;       // every record's TTL (triton-cns: 30 s)
  int delay_ms = 1000;  // how often the records are rebuilt from VMAPI
};

// The DNS server on one UDP socket (loopback), with its records rebuilt
// every delay on its own thread. Thread-safe.
class CnsServer {
 public:
  CnsServer(DataCenter* dc, CnsOptions options);
  ~CnsServer();
  // Binds host:port (port 0: a free one); the bound port, or -1.
  int Bind(const std::string& host, int port);
  void Start();
  // The records as served now (the last rebuild).
  CnsRecords Records() const;
  const CnsOptions& options() const { return options_; }
  int64_t answered() const { return answered_.load(); }
  int64_t dropped() const { return dropped_.load(); }

 private:
  void Rebuild();
  void Serve();
  DataCenter* dc_;
  CnsOptions options_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;  // the rebuilding thread ends
  std::atomic<int64_t> answered_{0}, dropped_{0};
  mutable absl::Mutex mu_;
  CnsRecords records_ ABSL_GUARDED_BY(mu_);
  std::thread rebuild_, serve_;
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_CNS_H_
