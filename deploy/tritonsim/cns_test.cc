// tritonsim's CNS: the records triton-cns's rules give, the DNS wire format,
// and the server under a flood of junk.
#include "deploy/tritonsim/cns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace tritonsim {
namespace {

const char kZone[] = "dc1.cns.test";
const char kOwner[] = "o1";

CnsVm Vm(const std::string& uuid, const std::string& services, const std::string& ip) {
  CnsVm v;
  v.uuid = uuid;
  v.alias = "P-Web " + uuid;
  v.owner = kOwner;
  v.state = "running";
  v.services_tag = services;
  v.ips = {ip};
  return v;
}

std::vector<std::string> At(const CnsRecords& r, const std::string& name) {
  auto it = r.find(name);
  return it == r.end() ? std::vector<std::string>{} : it->second;
}

std::string Svc(const std::string& s) { return s + ".svc.o1.dc1.cns.test"; }

TEST(CnsRecordsTest, ServiceRecordsFollowTritonCnsRules) {
  std::vector<CnsVm> vms = {Vm("a", "web,api:8080", "10.0.0.1"), Vm("b", "web", "10.0.0.2"),
                            Vm("c", "web", "10.0.0.3"), Vm("d", "web", "10.0.0.4"), Vm("e", "web", "10.0.0.5"),
                            Vm("f", "web", "10.0.0.6"), Vm("g", "web", "10.0.0.7"), Vm("h", "web", "10.0.0.8")};
  vms[1].status = "down";      // triton.cns.status down: out of services, instance kept
  vms[2].state = "stopped";    // not running: out of services, instance kept
  vms[3].server_down = true;   // its server is down: out of services
  vms[4].disabled = true;      // triton.cns.disable: out of everything
  vms[5].state = "failed";     // failed: out of everything
  vms[6].status = "up";        // "up" counts as absent
  vms[7].owner = "o2";         // an account with CNS off
  CnsRecords r = BuildCnsRecords(vms, {"o2"}, kZone);
  EXPECT_EQ(At(r, Svc("web")), (std::vector<std::string>{"10.0.0.1", "10.0.0.7"}));
  EXPECT_EQ(At(r, Svc("api")), (std::vector<std::string>{"10.0.0.1"})) << "a port after ':' is not in the name";
  EXPECT_EQ(At(r, "b.inst.o1.dc1.cns.test"), (std::vector<std::string>{"10.0.0.2"}));
  EXPECT_EQ(At(r, "c.inst.o1.dc1.cns.test"), (std::vector<std::string>{"10.0.0.3"}));
  EXPECT_TRUE(At(r, "e.inst.o1.dc1.cns.test").empty());
  EXPECT_TRUE(At(r, "f.inst.o1.dc1.cns.test").empty());
  EXPECT_TRUE(At(r, "h.inst.o2.dc1.cns.test").empty());
  EXPECT_EQ(At(r, "p-web-a.inst.o1.dc1.cns.test"), (std::vector<std::string>{"10.0.0.1"})) << "alias, dnsified";
}

std::string Query(const std::string& name, uint16_t qtype = 1, uint16_t id = 0x4242) {
  std::string m = {static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    m.push_back(static_cast<char>(dot - start));
    m.append(name, start, dot - start);
    start = dot + 1;
  }
  m.push_back(0);
  m += {static_cast<char>(qtype >> 8), static_cast<char>(qtype & 0xff), 0, 1};
  return m;
}

TEST(CnsWireTest, AQueryAndItsAnswer) {
  std::string m = Query("Web.SVC.o1.dc1.cns.test");
  auto q = ParseDnsQuery(m);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->id, 0x4242);
  EXPECT_TRUE(q->recursion_desired);
  EXPECT_EQ(q->name, "web.svc.o1.dc1.cns.test");
  EXPECT_EQ(q->qtype, 1);
  std::string a = BuildDnsAnswer(m, *q, {"10.0.0.1", "10.0.0.2"}, 30, 0);
  ASSERT_GE(a.size(), m.size() + 2 * 16);
  EXPECT_EQ(static_cast<uint8_t>(a[2]) & 0x80, 0x80) << "a response";
  EXPECT_EQ(static_cast<uint8_t>(a[7]), 2) << "two answers";
  const unsigned char* first = reinterpret_cast<const unsigned char*>(a.data()) + m.size();
  EXPECT_EQ((first[6] << 24) | (first[7] << 16) | (first[8] << 8) | first[9], 30) << "the TTL";
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(first) + 12, 4), std::string("\x0a\x00\x00\x01", 4));
  std::string nx = BuildDnsAnswer(m, *q, {}, 30, 3);
  EXPECT_EQ(static_cast<uint8_t>(nx[3]) & 0x0f, 3);
  EXPECT_EQ(static_cast<uint8_t>(nx[7]), 0);
  EXPECT_FALSE(ParseDnsQuery(a)) << "a response is not a query";
  EXPECT_FALSE(ParseDnsQuery(m.substr(0, 11)));
  EXPECT_FALSE(ParseDnsQuery(m.substr(0, m.size() - 1)));
  std::string pointer = m.substr(0, 12) + "\xc0\x0c" + std::string("\x00\x01\x00\x01", 4);
  EXPECT_FALSE(ParseDnsQuery(pointer));
}

// The server answers a resolver as CNS would, and keeps answering through
// a flood of junk (each dropped, counted).
TEST(CnsServerTest, AnswersThroughAFloodOfJunk) {
  Options o;
  o.clock = mariposa::RealClock::Get();
  o.servers = 0;
  DataCenter dc(o);
  CnsOptions c;
  c.zone = kZone;
  c.delay_ms = 20;
  CnsServer server(&dc, c);
  int port = server.Bind("127.0.0.1", 0);
  ASSERT_GT(port, 0);
  server.Start();
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  auto ask = [&](const std::string& m) {
    sendto(fd, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    char buf[1500];
    ssize_t got = recv(fd, buf, sizeof(buf), 0);
    return got > 0 ? std::string(buf, static_cast<size_t>(got)) : std::string();
  };
  std::string nx = ask(Query("nothing.svc.o1.dc1.cns.test"));
  ASSERT_GE(nx.size(), 12u);
  EXPECT_EQ(nx[3] & 0x0f, 3) << "NXDOMAIN in the zone";
  std::string refused = ask(Query("example.com"));
  ASSERT_GE(refused.size(), 12u);
  EXPECT_EQ(refused[3] & 0x0f, 5) << "REFUSED outside it";
  int junk = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string m(static_cast<size_t>(i % 40), static_cast<char>(i * 7));
    if (i % 3 == 0) m = Query("x.svc.o1.dc1.cns.test").substr(0, static_cast<size_t>(i % 20));
    if (i % 5 == 0) m = std::string("\x00\x01\x81\x80", 4) + m;  // a response
    sendto(fd, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    ++junk;
  }
  // Still answering after the flood (a reply may be queued before ours).
  bool answered = false;
  for (int tries = 0; tries < 50 && !answered; ++tries) {
    std::string a = ask(Query("nothing.svc.o1.dc1.cns.test", 1, static_cast<uint16_t>(9000 + tries)));
    answered = a.size() >= 12 && static_cast<uint8_t>(a[0]) == ((9000 + tries) >> 8) &&
               static_cast<uint8_t>(a[1]) == ((9000 + tries) & 0xff);
  }
  EXPECT_TRUE(answered);
  EXPECT_GT(server.dropped(), 0);
  close(fd);
}

}  // namespace
}  // namespace tritonsim
