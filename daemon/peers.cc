#include "daemon/peers.h"

#include <algorithm>
#include <map>
#include <set>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "mariposa/v1/admin.grpc.pb.h"

namespace mariposa {
namespace {

// "a=x,b=y" -> {a: x, b: y}; empty entries are skipped.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Pairs(const std::string& flag,
                                                                       const std::string& value,
                                                                       const std::string& example) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    size_t eq = part.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == part.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": \"", part, "\" is not NAME=VALUE; give ", example));
    }
    out.emplace_back(std::string(absl::StripAsciiWhitespace(part.substr(0, eq))),
                     std::string(absl::StripAsciiWhitespace(part.substr(eq + 1))));
  }
  return out;
}

// What to check when peer `name` at `address` cannot be reached (its
// status questions and the calls sent to it say the same).
std::string Unreachable(const std::string& name, const std::string& address) {
  return absl::StrCat("is mariposad running in ", name, " at ", address, ", and is the link between the data centers up?");
}

}  // namespace

absl::Status CheckDataCenterName(const std::string& flag, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() != '-' && name.back() != '-';
  for (char c : name) ok = ok && (absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", name,
                                                 "\" is not a data center name: a DNS label of a-z, 0-9 and '-', "
                                                 "1 to 63 bytes (as Triton names its data centers: us-east-1)"));
}

absl::StatusOr<std::vector<PeerSpec>> ParsePeers(const std::string& self, const std::string& peers,
                                                 const std::string& tokens) {
  std::vector<PeerSpec> out;
  auto listed = Pairs("peers", peers, "--peers us-west-1=mariposa.us-west-1.example.com:7740,eu-central-1=…");
  if (!listed.ok()) return listed.status();
  if (!listed->empty() && self.empty()) {
    return absl::InvalidArgumentError("--peers needs --datacenter: the name of this data center, which its peers know it by");
  }
  std::set<std::string> names;
  for (const auto& [name, address] : *listed) {
    if (absl::Status st = CheckDataCenterName("--peers", name); !st.ok()) return st;
    if (name == self) {
      return absl::InvalidArgumentError(absl::StrCat("--peers names ", name,
                                                     ", this data center (--datacenter): list only the others"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("--peers names ", name, " twice; give each data center once"));
    }
    size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == address.size() ||
        address.find("://") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--peers ", name, "=", address,
                                                     ": give its mariposad's gRPC address as HOST:PORT "
                                                     "(--peer-ca makes the connection TLS)"));
    }
    out.push_back({name, address, ""});
  }
  auto tokened = Pairs("peer-tokens", tokens, "--peer-tokens us-west-1=/etc/mariposa/peer-us-west-1.token");
  if (!tokened.ok()) return tokened.status();
  for (const auto& [name, file] : *tokened) {
    auto it = std::find_if(out.begin(), out.end(), [&](const PeerSpec& p) { return p.name == name; });
    if (it == out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--peer-tokens names ", name, ", which --peers does not list; add it to --peers or drop it"));
    }
    if (!it->token_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--peer-tokens names ", name, " twice"));
    }
    it->token_file = file;
  }
  return out;
}

PeerView ObservePeer(PeerView view, const PeerAnswer& answer, absl::Time now) {
  view.asked = true;
  view.checked_at = now;
  if (answer.status.ok() && answer.datacenter == view.name) {
    view.reachable = true;
    view.last_ok = now;
    view.rtt = answer.rtt;
    view.version = answer.version;
    view.mode = answer.mode;
    view.error.clear();
    view.failures = 0;
    return view;
  }
  view.reachable = false;
  ++view.failures;
  if (answer.status.ok()) {
    view.error = absl::StrCat(
        "the mariposad at ", view.address, " is data center ",
        answer.datacenter.empty() ? "(none: it runs without --datacenter)" : "\"" + answer.datacenter + "\"",
        ", not ", view.name, "; fix --peers here or --datacenter there");
    return view;
  }
  std::string fix;
  switch (answer.status.code()) {
    case absl::StatusCode::kUnauthenticated:
      fix = absl::StrCat("give a token ", view.name, " accepts (--peer-tokens ", view.name,
                         "=FILE; there: `mariposa admin token create --name peer-… --role viewer --all-projects`)");
      break;
    case absl::StatusCode::kPermissionDenied:
      fix = absl::StrCat("the token this data center presents lacks the viewer role on every project in ", view.name);
      break;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
      fix = Unreachable(view.name, view.address);
      break;
    default:
      fix = absl::StrCat("see mariposad's log in ", view.name);
  }
  view.error = absl::StrCat(absl::StatusCodeToString(answer.status.code()), ": ", answer.status.message(), "; ", fix);
  return view;
}

struct PeerProber::Peer {
  PeerSpec spec;
  auth::ClientCredentials creds;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Admin::Stub> stub;
};

PeerProber::PeerProber(std::string self, std::vector<PeerSpec> peers, PeerCredentials creds, absl::Duration interval,
                       absl::Duration timeout, const Clock* clock)
    : self_(std::move(self)), creds_(std::move(creds)), interval_(interval), timeout_(timeout), clock_(clock) {
  for (PeerSpec& s : peers) {
    auto p = std::make_unique<Peer>();
    p->spec = std::move(s);
    PeerView v;
    v.name = p->spec.name;
    v.address = p->spec.address;
    v.error = "not asked yet";
    views_.push_back(v);
    peers_.push_back(std::move(p));
  }
}

PeerProber::~PeerProber() { Stop(); }

absl::Status PeerProber::Start() {
  for (auto& p : peers_) {
    p->creds.ca_file = creds_.ca_file;
    p->creds.cert_file = creds_.cert_file;
    p->creds.key_file = creds_.key_file;
    if (!p->spec.token_file.empty()) {
      auto token = auth::ReadTokenFile(p->spec.token_file);
      if (!token.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--peer-tokens ", p->spec.name, ": ", token.status().message()));
      }
      p->creds.token = *token;
    }
    // A peer back after a partition is seen at the next question, not after
    // gRPC's reconnect backoff (up to 2 minutes by default).
    grpc::ChannelArguments args;
    int backoff_ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(interval_), 10000));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, backoff_ms);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, backoff_ms);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, backoff_ms);
    auto channel = auth::Dial(p->spec.address, p->creds, args);
    if (!channel.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--peers ", p->spec.name, ": ", channel.status().message()));
    }
    p->channel = *channel;
    p->stub = v1::Admin::NewStub(p->channel);
  }
  if (!peers_.empty()) thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void PeerProber::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::vector<PeerView> PeerProber::Views() const {
  absl::MutexLock l(&mu_);
  return views_;
}

absl::Status PeerProber::Call(
    const std::string& name,
    const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext*)>& call,
    absl::Duration timeout) const {
  const Peer* peer = nullptr;
  std::vector<std::string> names;
  for (const auto& p : peers_) {
    names.push_back(p->spec.name);
    if (p->spec.name == name) peer = p.get();
  }
  if (peer == nullptr || peer->stub == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " is not a peer of data center ", self_, " (--peers lists: ",
        names.empty() ? "none" : absl::StrJoin(names, ", "), "); `mariposa datacenters` shows them"));
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_->Now() + timeout));
  auth::AddCallCredentials(peer->creds, &ctx);
  grpc::Status st = call(peer->channel, &ctx);
  if (st.ok()) return absl::OkStatus();
  std::string fix;
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE || st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    fix = absl::StrCat("; ", Unreachable(name, peer->spec.address), " (`mariposa datacenters`)");
  } else if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
             st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    fix = absl::StrCat("; the token data center ", self_, " presents there (--peer-tokens ", name,
                       "=FILE) needs the role this call does in ", name);
  }
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat("data center ", name, ": ", st.error_message(), fix));
}

PeerAnswer PeerProber::Ask(Peer* p) {
  PeerAnswer a;
  grpc::ClientContext ctx;
  absl::Time start = clock_->Now();
  ctx.set_deadline(absl::ToChronoTime(start + timeout_));
  auth::AddCallCredentials(p->creds, &ctx);
  v1::StatusRequest req;
  v1::StatusResponse resp;
  grpc::Status st = p->stub->Status(&ctx, req, &resp);
  a.rtt = clock_->Now() - start;
  if (!st.ok()) {
    a.status = absl::Status(static_cast<absl::StatusCode>(st.error_code()), st.error_message());
    return a;
  }
  a.datacenter = resp.datacenter();
  a.version = resp.version();
  a.mode = resp.mode();
  return a;
}

void PeerProber::Run() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    for (size_t k = 0; k < peers_.size(); ++k) {
      mu_.Unlock();
      PeerAnswer a = Ask(peers_[k].get());
      mu_.Lock();
      views_[k] = ObservePeer(views_[k], a, clock_->Now());
    }
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
    clock_->AwaitUntil(&mu_, absl::Condition(&stopping), clock_->Now() + interval_);
  }
}

}  // namespace mariposa
