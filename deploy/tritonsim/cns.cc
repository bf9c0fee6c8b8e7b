#include "deploy/tritonsim/cns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tritonsim {
namespace {

std::string Lower(std::string s) { return absl::AsciiStrToLower(s); }

// triton-cns's dnsify: lower case, runs of other characters as '-'.
std::string Dnsify(const std::string& s) {
  std::string out;
  bool run = false;
  for (char c : absl::AsciiStrToLower(s)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (ok) {
      out.push_back(c);
      run = false;
    } else if (!run) {
      out.push_back('-');
      run = true;
    }
  }
  return out;
}

void Add(CnsRecords* r, const std::string& name, const std::vector<std::string>& ips) {
  std::vector<std::string>& list = (*r)[Lower(name)];
  for (const std::string& ip : ips) {
    if (std::find(list.begin(), list.end(), ip) == list.end()) list.push_back(ip);
  }
}

void Put16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v & 0xff));
}

void Put32(std::string* out, uint32_t v) {
  Put16(out, static_cast<uint16_t>(v >> 16));
  Put16(out, static_cast<uint16_t>(v & 0xffff));
}

}  // namespace

CnsRecords BuildCnsRecords(const std::vector<CnsVm>& vms, const std::set<std::string>& disabled_accounts,
                           const std::string& zone) {
  CnsRecords out;
  for (const CnsVm& vm : vms) {
    if (vm.disabled || disabled_accounts.count(vm.owner) || vm.ips.empty()) continue;
    if (vm.state == "destroyed" || vm.state == "failed") continue;
    std::string suffix = absl::StrCat(".inst.", vm.owner, ".", zone);
    Add(&out, vm.uuid + suffix, vm.ips);
    if (!vm.alias.empty() && vm.alias.size() < 63) Add(&out, Dnsify(vm.alias) + suffix, vm.ips);
    bool listed = vm.state == "running" && !vm.server_down && (!vm.status || *vm.status == "up");
    if (!listed) continue;
    for (absl::string_view tag : absl::StrSplit(vm.services_tag, ',', absl::SkipWhitespace())) {
      std::string svc(absl::StripAsciiWhitespace(tag.substr(0, tag.find(':'))));
      if (!svc.empty()) Add(&out, absl::StrCat(svc, ".svc.", vm.owner, ".", zone), vm.ips);
    }
  }
  return out;
}

std::optional<DnsQuery> ParseDnsQuery(const std::string& m) {
  if (m.size() < 12) return std::nullopt;
  auto u8 = [&](size_t i) { return static_cast<uint8_t>(m[i]); };
  DnsQuery q;
  q.id = static_cast<uint16_t>(u8(0) << 8 | u8(1));
  uint8_t flags = u8(2);
  if ((flags & 0x80) != 0 || ((flags >> 3) & 0x0f) != 0) return std::nullopt;  // a response, or not QUERY
  q.recursion_desired = (flags & 0x01) != 0;
  uint16_t questions = static_cast<uint16_t>(u8(4) << 8 | u8(5));
  if (questions == 0) return std::nullopt;
  size_t i = 12;
  std::string name;
  while (true) {
    if (i >= m.size()) return std::nullopt;
    uint8_t len = u8(i++);
    if (len == 0) break;
    if ((len & 0xc0) != 0 || i + len > m.size() || name.size() + len + 1 > 255) return std::nullopt;  // no pointers in a question
    if (!name.empty()) name.push_back('.');
    name.append(m, i, len);
    i += len;
  }
  if (i + 4 > m.size()) return std::nullopt;
  q.qtype = static_cast<uint16_t>(u8(i) << 8 | u8(i + 1));
  q.qclass = static_cast<uint16_t>(u8(i + 2) << 8 | u8(i + 3));
  q.question_end = i + 4;
  q.name = absl::AsciiStrToLower(name);
  return q;
}

std::string BuildDnsAnswer(const std::string& message, const DnsQuery& q, const std::vector<std::string>& ips,
                           uint32_t ttl, int rcode) {
  std::string out;
  Put16(&out, q.id);
  // QR, AA, RD as asked; RCODE.
  out.push_back(static_cast<char>(0x84 | (q.recursion_desired ? 0x01 : 0)));
  out.push_back(static_cast<char>(rcode & 0x0f));
  std::vector<in_addr> addrs;
  for (const std::string& ip : ips) {
    in_addr a;
    if (inet_pton(AF_INET, ip.c_str(), &a) == 1) addrs.push_back(a);
  }
  bool answer = rcode == 0 && (q.qtype == 1 || q.qtype == 255) && (q.qclass == 1 || q.qclass == 255);
  Put16(&out, 1);                                                   // QDCOUNT
  Put16(&out, answer ? static_cast<uint16_t>(addrs.size()) : 0);    // ANCOUNT
  Put16(&out, 0);                                                   // NSCOUNT
  Put16(&out, 0);                                                   // ARCOUNT
  out.append(message, 12, q.question_end - 12);
  if (!answer) return out;
  for (const in_addr& a : addrs) {
    Put16(&out, 0xc00c);  // the question's name
    Put16(&out, 1);       // A
    Put16(&out, 1);       // IN
    Put32(&out, ttl);
    Put16(&out, 4);
    out.append(reinterpret_cast<const char*>(&a), 4);
  }
  return out;
}

CnsServer::CnsServer(DataCenter* dc, CnsOptions options) : dc_(dc), options_(std::move(options)) {
  options_.zone = Lower(options_.zone);
}

CnsServer::~CnsServer() {
  {
    absl::MutexLock l(&stop_mu_);
    stopping_ = true;
  }
  stop_ = true;
  if (rebuild_.joinable()) rebuild_.join();
  if (serve_.joinable()) serve_.join();
  if (fd_ >= 0) close(fd_);
}

int CnsServer::Bind(const std::string& host, int port) {
  fd_ = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd_ < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return -1;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  socklen_t len = sizeof(a);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return ntohs(a.sin_port);
}

void CnsServer::Start() {
  Rebuild();
  rebuild_ = std::thread([this] {
    const mariposa::Clock* clock = dc_->clock();
    while (true) {
      {
        absl::MutexLock l(&stop_mu_);
        absl::Time next = clock->Now() + absl::Milliseconds(options_.delay_ms);
        if (clock->AwaitUntil(&stop_mu_, absl::Condition(&stopping_), next) || stopping_) return;
      }
      Rebuild();
    }
  });
  serve_ = std::thread([this] { Serve(); });
}

CnsRecords CnsServer::Records() const {
  absl::MutexLock l(&mu_);
  return records_;
}

void CnsServer::Rebuild() {
  CnsRecords next = BuildCnsRecords(dc_->CnsVms(), dc_->CnsDisabledAccounts(), options_.zone);
  absl::MutexLock l(&mu_);
  records_ = std::move(next);
}

void CnsServer::Serve() {
  char buf[1500];
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    ssize_t got = recvfrom(fd_, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (got <= 0) continue;
    std::string message(buf, static_cast<size_t>(got));
    std::optional<DnsQuery> q = ParseDnsQuery(message);
    if (!q) {
      ++dropped_;
      continue;
    }
    std::vector<std::string> ips;
    int rcode = 0;
    bool in_zone = q->name == options_.zone ||
                   (q->name.size() > options_.zone.size() &&
                    q->name.compare(q->name.size() - options_.zone.size(), std::string::npos, options_.zone) == 0 &&
                    q->name[q->name.size() - options_.zone.size() - 1] == '.');
    if (!in_zone) {
      rcode = 5;  // REFUSED: not ours, and no recursion here
    } else {
      absl::MutexLock l(&mu_);
      auto it = records_.find(q->name);
      if (it == records_.end()) rcode = 3;  // NXDOMAIN
      else ips = it->second;
    }
    std::string reply = BuildDnsAnswer(message, *q, ips, static_cast<uint32_t>(options_.ttl_s), rcode);
    sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    ++answered_;
  }
}

}  // namespace tritonsim
