#include "health/agent.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <set>

#include "common/log.h"
#include "health/wire.h"
#include "mariposa/v1/health.grpc.pb.h"

namespace mariposa::health {
namespace {

constexpr size_t kLatenessSamples = 4096;
constexpr int kChangesPerMessage = 1000;

}  // namespace

Agent::Agent(Options options, HealthMonitor::Hooks hooks) : options_(std::move(options)), hooks_(std::move(hooks)) {
  lateness_ms_.reserve(kLatenessSamples);
  HealthMonitor::Hooks mine;
  mine.on_change = [this](const HealthChange& c) {
    absl::MutexLock l(&mu_);  // releasing it wakes the writer
    // Past the bound the oldest go: after a reconnect every current state
    // is sent anyway.
    if (outbox_.size() >= options_.max_outbox) outbox_.pop_front();
    outbox_.push_back(c);
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
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

double Agent::LatenessP99Ms() {
  absl::MutexLock l(&mu_);
  if (lateness_ms_.empty()) return 0;
  std::vector<double> v = lateness_ms_;
  size_t k = std::min(v.size() - 1, v.size() * 99 / 100);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

void Agent::Run() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (!stop_) {
    int64_t before = sessions_;
    Session();
    if (stop_) break;
    // A session that got through resets the backoff; failures double it.
    backoff = sessions_ > before ? absl::Milliseconds(100) : std::min(backoff * 2, absl::Seconds(2));
    absl::MutexLock l(&mu_);
    auto stopped = [this] { return stop_.load(); };
    options_.clock->AwaitUntil(&mu_, absl::Condition(&stopped), options_.clock->Now() + backoff);
  }
}

void Agent::Apply(bool reset, std::map<std::string, std::map<std::string, Target>>& add,
                  const std::vector<std::pair<std::string, std::string>>& removes) {
  std::set<std::string> touched;
  if (reset) {
    for (const auto& kv : targets_) touched.insert(kv.first);
    targets_.clear();
  }
  for (auto& [group, targets] : add) {
    touched.insert(group);
    for (auto& kv : targets) targets_[group][kv.first] = std::move(kv.second);
  }
  for (const auto& [group, key] : removes) {
    touched.insert(group);
    auto g = targets_.find(group);
    if (g != targets_.end()) g->second.erase(key);
  }
  for (const std::string& group : touched) {
    std::vector<Target> all;
    auto g = targets_.find(group);
    if (g != targets_.end()) {
      for (const auto& kv : g->second) all.push_back(kv.second);
      if (g->second.empty()) targets_.erase(g);
    }
    monitor_->Assign(group, std::move(all));
  }
  // Checks this agent already knows (it kept checking while mariposad was
  // away, or had them before a move): mariposad learns their state now, as
  // no change may come for a long time.
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
    for (HealthChange& c : known) outbox_.push_back(std::move(c));
  }
}

void Agent::Session() {
  auto channel = auth::Dial(options_.coordinator, options_.credentials);
  if (!channel.ok()) {
    LogError("health agent cannot dial mariposad", {{"error", channel.status().ToString()}});
    return;
  }
  auto stub = v1::HealthAgents::NewStub(*channel);
  grpc::ClientContext ctx;
  auth::AddCallCredentials(options_.credentials, &ctx);
  {
    absl::MutexLock l(&mu_);
    if (stop_) return;
    ctx_ = &ctx;
  }
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage hello;
  hello.mutable_hello()->set_agent_id(options_.id);
  for (const std::string& n : options_.networks) hello.mutable_hello()->add_networks(n);
  hello.mutable_hello()->set_grpc_addr(options_.grpc_addr);
  hello.mutable_hello()->set_metrics_addr(options_.metrics_addr);
  {
    // What changed while disconnected is stale: the first assignment of this
    // session (a reset) makes Apply send the current state of every check.
    absl::MutexLock l(&mu_);
    outbox_.clear();
  }
  std::atomic<bool> done{false};
  std::atomic<int64_t> heartbeat_ms{absl::ToInt64Milliseconds(options_.heartbeat)};
  std::thread writer;
  if (stream->Write(hello)) {
    writer = std::thread([&] {
      absl::Time last = absl::InfinitePast();
      while (!done && !stop_) {
        v1::AgentMessage m;
        {
          absl::MutexLock l(&mu_);
          const Clock* clock = options_.clock;
          absl::Duration every = absl::Milliseconds(heartbeat_ms.load());
          auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done || stop_ || !outbox_.empty(); };
          clock->AwaitUntil(&mu_, absl::Condition(&ready), last + every);
          if (done || stop_) break;
          if (!outbox_.empty() && outbox_.size() < kChangesPerMessage && options_.flush > absl::ZeroDuration()) {
            auto ended = [&] { return done || stop_.load(); };
            clock->AwaitUntil(&mu_, absl::Condition(&ended), clock->Now() + options_.flush);
            if (done || stop_) break;
          }
          while (!outbox_.empty() && m.changes_size() < kChangesPerMessage) {
            ToProto(outbox_.front(), m.add_changes());
            outbox_.pop_front();
          }
          if (m.changes_size() == 0 && clock->Now() < last + every) continue;
        }
        last = options_.clock->Now();
        v1::AgentCountersMsg* c = m.mutable_counters();
        c->set_checks_run(checks_run_);
        c->set_checks_failed(checks_failed_);
        c->set_assigned(static_cast<int64_t>(monitor_->targets()));
        c->set_lateness_p99_ms(LatenessP99Ms());
        if (!stream->Write(m)) {
          ctx.TryCancel();
          break;
        }
      }
    });
    bool reset = false;
    std::map<std::string, std::map<std::string, Target>> add;
    std::vector<std::pair<std::string, std::string>> removes;
    v1::Assignment a;
    bool first = true;
    while (stream->Read(&a)) {
      if (first) {
        first = false;
        sessions_++;
        connected_ = true;
        LogInfo("health agent connected to mariposad", {{"agent", options_.id}, {"mariposad", options_.coordinator}});
      }
      if (a.lease_ms() > 0) {
        heartbeat_ms = std::min(absl::ToInt64Milliseconds(options_.heartbeat), a.lease_ms() / 3);
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
      Apply(reset, add, removes);
      reset = false;
      add.clear();
      removes.clear();
    }
  }
  {
    absl::MutexLock l(&mu_);  // releasing it wakes the writer
    done = true;
  }
  if (writer.joinable()) writer.join();
  grpc::Status st = stream->Finish();
  {
    absl::MutexLock l(&mu_);
    ctx_ = nullptr;
  }
  if (connected_.exchange(false)) {
    LogInfo("health agent lost mariposad; checking on and reconnecting",
            {{"agent", options_.id}, {"error", st.error_message()}});
  } else if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
             st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
             st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // Refused: say why (a missing or wrong credential, another's id, too
    // many agents); it retries with backoff, in case an admin fixes it.
    LogError("mariposad refused this health agent", {{"agent", options_.id}, {"error", st.error_message()}});
  }
}

}  // namespace mariposa::health
