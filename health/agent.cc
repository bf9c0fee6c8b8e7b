#include "health/agent.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <set>

#include "common/log.h"
#include "health/links.h"
#include "health/wire.h"
#include "mariposa/v1/health.grpc.pb.h"

namespace mariposa::health {
namespace {

constexpr size_t kLatenessSamples = 4096;
constexpr int kChangesPerMessage = 1000;
// How often the links are looked at again (PlanLinks).
constexpr absl::Duration kReplanEvery = absl::Milliseconds(500);

}  // namespace

Agent::Agent(Options options, HealthMonitor::Hooks hooks) : options_(std::move(options)), hooks_(std::move(hooks)) {
  lateness_ms_.reserve(kLatenessSamples);
  HealthMonitor::Hooks mine;
  mine.on_change = [this](const HealthChange& c) {
    absl::MutexLock l(&mu_);  // releasing it wakes the writers
    // Back to every node that assigned the check (one, but for a moment
    // during a move). Past the bound the oldest go: after a reconnect every
    // current state is sent anyway.
    const std::string key = TargetKey(c.instance, c.check);
    for (auto& [address, link] : links_) {
      auto g = link->targets.find(c.group);
      if (g == link->targets.end() || !g->second.count(key)) continue;
      if (link->outbox.size() >= options_.max_outbox) link->outbox.pop_front();
      link->outbox.push_back(c);
    }
  };
  mine.on_result = [this](const std::string& type, bool pass, absl::Duration took) {
    checks_run_++;
    if (!pass) checks_failed_++;
    if (hooks_.on_result) hooks_.on_result(type, pass, took);
  };
  mine.on_start = [this](absl::Duration late) {
    {
      absl::MutexLock l(&mu_);
      double ms = absl::ToDoubleMilliseconds(late);
      if (lateness_ms_.size() < kLatenessSamples) {
        lateness_ms_.push_back(ms);
      } else {
        lateness_ms_[lateness_next_] = ms;
        lateness_next_ = (lateness_next_ + 1) % kLatenessSamples;
      }
    }
    if (hooks_.on_start) hooks_.on_start(late);
  };
  monitor_ = std::make_unique<HealthMonitor>(std::move(mine), options_.clock);
}

Agent::~Agent() {
  Stop();
  monitor_.reset();  // its callbacks use the members above
}

void Agent::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Agent::Stop() {
  {
    absl::MutexLock l(&mu_);  // releasing it wakes every wait
    stop_ = true;
    for (auto& [address, link] : links_) {
      if (link->ctx != nullptr) link->ctx->TryCancel();
    }
  }
  if (thread_.joinable()) thread_.join();
}

int Agent::connected_links() const {
  absl::MutexLock l(&mu_);
  int n = 0;
  for (const auto& [address, link] : links_) n += link->connected ? 1 : 0;
  return n;
}

void Agent::Run() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    LinkPlan plan;
    if (options_.discover) {
      std::vector<LinkView> views;
      for (const auto& [address, link] : links_) views.push_back({address, link->connected, link->node, link->nodes});
      plan = PlanLinks(options_.seeds, views);
    } else {
      for (const std::string& a : options_.seeds) {
        if (!links_.count(a)) plan.open.push_back(a);
      }
    }
    for (const std::string& a : plan.open) {
      auto link = std::make_unique<Link>();
      link->address = a;
      Link* raw = link.get();
      links_[a] = std::move(link);
      raw->thread = std::thread([this, raw] { LinkLoop(raw); });
    }
    std::vector<std::unique_ptr<Link>> closing;
    for (const std::string& a : plan.close) {
      auto it = links_.find(a);
      if (it == links_.end()) continue;
      it->second->stop = true;
      if (it->second->ctx != nullptr) it->second->ctx->TryCancel();
      closing.push_back(std::move(it->second));
      links_.erase(it);
    }
    if (!closing.empty()) {
      mu_.Unlock();
      for (auto& link : closing) {
        LogInfo("health agent closed its link to a node that is gone; that node's checks are dropped",
                {{"agent", options_.id}, {"mariposad", link->address}, {"node", link->node}});
        Close(std::move(link), true);
      }
      mu_.Lock();
      continue;
    }
    auto stopped = [this] { return stop_.load(); };
    options_.clock->AwaitUntil(&mu_, absl::Condition(&stopped), options_.clock->Now() + kReplanEvery);
  }
  std::vector<std::unique_ptr<Link>> all;
  for (auto& [address, link] : links_) {
    link->stop = true;
    if (link->ctx != nullptr) link->ctx->TryCancel();
    all.push_back(std::move(link));
  }
  links_.clear();
  mu_.Unlock();
  for (auto& link : all) Close(std::move(link), false);
  mu_.Lock();
}

void Agent::Close(std::unique_ptr<Link> link, bool reassign) {
  if (link->thread.joinable()) link->thread.join();
  if (!reassign) return;
  std::set<std::string> groups;
  for (const auto& kv : link->targets) groups.insert(kv.first);
  Reassign(groups);  // `link` is out of links_: the unions go without it
}

void Agent::Reassign(const std::set<std::string>& groups) {
  absl::MutexLock a(&assign_mu_);
  for (const std::string& group : groups) {
    std::map<std::string, Target> all;
    {
      absl::MutexLock l(&mu_);
      for (const auto& [address, link] : links_) {
        auto g = link->targets.find(group);
        if (g != link->targets.end()) all.insert(g->second.begin(), g->second.end());
      }
    }
    std::vector<Target> targets;
    targets.reserve(all.size());
    for (auto& kv : all) targets.push_back(std::move(kv.second));
    monitor_->Assign(group, std::move(targets));
  }
}

double Agent::LatenessP99Ms() {
  absl::MutexLock l(&mu_);
  if (lateness_ms_.empty()) return 0;
  std::vector<double> v = lateness_ms_;
  size_t k = std::min(v.size() - 1, v.size() * 99 / 100);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

void Agent::LinkLoop(Link* link) {
  absl::Duration backoff = absl::Milliseconds(100);
  absl::MutexLock l(&mu_);
  auto ended = [this, link] { return stop_ || link->stop; };
  while (!ended()) {
    int64_t before = sessions_;
    mu_.Unlock();
    Session(link);
    mu_.Lock();
    if (ended()) break;
    // A session that got through resets the backoff; failures double it.
    backoff = sessions_ > before ? absl::Milliseconds(100) : std::min(backoff * 2, absl::Seconds(2));
    options_.clock->AwaitUntil(&mu_, absl::Condition(&ended), options_.clock->Now() + backoff);
  }
}

void Agent::Apply(Link* link, bool reset, Targets& add, const std::vector<std::pair<std::string, std::string>>& removes) {
  std::set<std::string> touched;
  {
    absl::MutexLock l(&mu_);
    Targets& mine = link->targets;
    if (reset) {
      for (const auto& kv : mine) touched.insert(kv.first);
      mine.clear();
    }
    for (auto& [group, targets] : add) {
      touched.insert(group);
      for (auto& kv : targets) mine[group][kv.first] = kv.second;
    }
    for (const auto& [group, key] : removes) {
      touched.insert(group);
      auto g = mine.find(group);
      if (g != mine.end()) g->second.erase(key);
    }
    for (const std::string& group : touched) {
      auto g = mine.find(group);
      if (g != mine.end() && g->second.empty()) mine.erase(g);
    }
  }
  if (touched.empty()) return;
  Reassign(touched);
  // Checks this agent already knows (it kept checking while mariposad was
  // away, had them before a move, or runs them for another node too):
  // mariposad learns their state now, as no change may come for a long time.
  std::vector<HealthChange> known;
  for (const auto& [group, targets] : add) {
    for (const auto& c : monitor_->Checks(group)) {
      if (c.state != Health::kUnknown && targets.count(TargetKey(c.instance, c.check))) {
        known.push_back({c.group, c.instance, c.check, c.state, c.state, false, c.last_detail});
      }
    }
  }
  if (!known.empty()) {
    absl::MutexLock l(&mu_);
    for (HealthChange& c : known) link->outbox.push_back(std::move(c));
  }
}

// Sends the outbox's changes (batched for up to `flush`) and a heartbeat at
// least every `heartbeat_ms`, until `done`, stop, or a failed write (then
// `cancel`).
void Agent::WriteLoop(Link* link, const std::function<bool(const v1::AgentMessage&)>& write,
                      const std::function<void()>& cancel, std::atomic<bool>* done,
                      std::atomic<int64_t>* heartbeat_ms) {
  absl::Time last = absl::InfinitePast();
  while (!*done && !stop_) {
    v1::AgentMessage m;
    int64_t assigned = 0;
    {
      absl::MutexLock l(&mu_);
      const Clock* clock = options_.clock;
      absl::Duration every = absl::Milliseconds(heartbeat_ms->load());
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return *done || stop_ || !link->outbox.empty(); };
      clock->AwaitUntil(&mu_, absl::Condition(&ready), last + every);
      if (*done || stop_) break;
      if (!link->outbox.empty() && link->outbox.size() < kChangesPerMessage &&
          options_.flush > absl::ZeroDuration()) {
        auto ended = [&] { return *done || stop_.load(); };
        clock->AwaitUntil(&mu_, absl::Condition(&ended), clock->Now() + options_.flush);
        if (*done || stop_) break;
      }
      while (!link->outbox.empty() && m.changes_size() < kChangesPerMessage) {
        ToProto(link->outbox.front(), m.add_changes());
        link->outbox.pop_front();
      }
      if (m.changes_size() == 0 && clock->Now() < last + every) continue;
      for (const auto& kv : link->targets) assigned += static_cast<int64_t>(kv.second.size());
    }
    last = options_.clock->Now();
    v1::AgentCountersMsg* c = m.mutable_counters();
    c->set_checks_run(checks_run_);
    c->set_checks_failed(checks_failed_);
    c->set_assigned(assigned);
    c->set_lateness_p99_ms(LatenessP99Ms());
    if (!write(m)) {
      cancel();
      break;
    }
  }
}

// Applies the assignments mariposad sends (a message with `more` waits for
// the rest) until the stream ends; whether it ever connected.
bool Agent::ReadLoop(Link* link, const std::function<bool(v1::Assignment*)>& read,
                     std::atomic<int64_t>* heartbeat_ms) {
  bool was_connected = false;
  bool reset = false;
  Targets add;
  std::vector<std::pair<std::string, std::string>> removes;
  v1::Assignment a;
  while (read(&a)) {
    std::map<std::string, std::string> nodes;
    for (const auto& n : a.nodes()) nodes[n.name()] = n.address();
    {
      absl::MutexLock l(&mu_);  // releasing it wakes the link keeper
      link->node = a.node();
      link->nodes = std::move(nodes);
      link->connected = true;
    }
    if (!was_connected) {
      was_connected = true;
      sessions_++;
      LogInfo("health agent connected to mariposad",
              {{"agent", options_.id}, {"mariposad", link->address}, {"node", a.node()}});
    }
    if (a.lease_ms() > 0) {
      *heartbeat_ms = std::min(absl::ToInt64Milliseconds(options_.heartbeat), a.lease_ms() / 3);
    }
    reset = reset || a.reset();
    for (const auto& t : a.add()) add[t.group()][TargetKey(t.instance(), t.check())] = FromProto(t);
    for (const auto& k : a.remove()) {
      std::string key = TargetKey(k.instance(), k.check());
      auto g = add.find(k.group());
      if (g != add.end()) g->second.erase(key);
      removes.push_back({k.group(), key});
    }
    if (a.more()) continue;
    Apply(link, reset, add, removes);
    reset = false;
    add.clear();
    removes.clear();
  }
  return was_connected;
}

void Agent::Session(Link* link) {
  auto channel = auth::Dial(link->address, options_.credentials);
  if (!channel.ok()) {
    LogError("health agent cannot dial mariposad", {{"mariposad", link->address}, {"error", channel.status().ToString()}});
    return;
  }
  auto stub = v1::HealthAgents::NewStub(*channel);
  grpc::ClientContext ctx;
  auth::AddCallCredentials(options_.credentials, &ctx);
  {
    absl::MutexLock l(&mu_);
    if (stop_ || link->stop) return;
    link->ctx = &ctx;
    // What changed while disconnected is stale: the first assignment of this
    // session (a reset) makes Apply send the current state of every check.
    link->outbox.clear();
  }
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage hello;
  hello.mutable_hello()->set_agent_id(options_.id);
  for (const std::string& n : options_.networks) hello.mutable_hello()->add_networks(n);
  hello.mutable_hello()->set_grpc_addr(options_.grpc_addr);
  hello.mutable_hello()->set_metrics_addr(options_.metrics_addr);
  std::atomic<bool> done{false};
  std::atomic<int64_t> heartbeat_ms{absl::ToInt64Milliseconds(options_.heartbeat)};
  std::thread writer;
  bool was_connected = false;
  if (stream->Write(hello)) {
    writer = std::thread([&] {
      WriteLoop(link, [&](const v1::AgentMessage& m) { return stream->Write(m); }, [&] { ctx.TryCancel(); }, &done,
                &heartbeat_ms);
    });
    was_connected = ReadLoop(link, [&](v1::Assignment* a) { return stream->Read(a); }, &heartbeat_ms);
  }
  {
    absl::MutexLock l(&mu_);  // releasing it wakes the writer and the link keeper
    done = true;
    link->connected = false;
  }
  if (writer.joinable()) writer.join();
  grpc::Status st = stream->Finish();
  {
    absl::MutexLock l(&mu_);
    link->ctx = nullptr;
  }
  if (was_connected) {
    LogInfo("health agent lost mariposad; checking on and reconnecting",
            {{"agent", options_.id}, {"mariposad", link->address}, {"error", st.error_message()}});
  } else if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
             st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
             st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // Refused: say why (a missing or wrong credential, another's id, too
    // many agents); it retries with backoff, in case an admin fixes it.
    LogError("mariposad refused this health agent",
             {{"agent", options_.id}, {"mariposad", link->address}, {"error", st.error_message()}});
  }
}

}  // namespace mariposa::health
