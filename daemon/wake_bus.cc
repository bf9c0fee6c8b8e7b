#include "daemon/wake_bus.h"

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace mariposa {

WakeBus::WakeBus(std::string uri, const Clock* clock, OnWake on_wake)
    : uri_(std::move(uri)), clock_(clock), on_wake_(std::move(on_wake)) {}

WakeBus::~WakeBus() {
  Stop();
  for (int fd : wake_pipe_) {
    if (fd >= 0) close(fd);
  }
}

absl::Status WakeBus::Start() {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return absl::InternalError("pipe2 failed");
  auto l = PgConnection::Open(uri_);
  if (!l.ok()) return l.status();
  if (auto r = (*l)->Exec(absl::StrCat("LISTEN ", kChannel)); !r.ok()) return r.status();
  listener_ = *std::move(l);
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void WakeBus::Loop() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (!stop_.load()) {
    auto got = listener_->WaitForNotifications(wake_pipe_[0]);
    if (stop_.load()) break;
    if (got.ok()) {
      if (!got->empty() && on_wake_) on_wake_(std::set<std::string>(got->begin(), got->end()));
      continue;
    }
    LogWarn("lost the wake-up channel; reconnecting (changes on other nodes wait for --resync meanwhile)",
            {{"error", got.status().ToString()}});
    while (!stop_.load()) {
      clock_->SleepFor(backoff);
      // At most a second apart: a node should not miss the others' changes
      // (a readonly state) for long after the database is back.
      backoff = std::min(backoff * 2, absl::Seconds(1));
      if (listener_->Reset().ok() && listener_->Exec(absl::StrCat("LISTEN ", kChannel)).ok()) {
        backoff = absl::Milliseconds(100);
        if (on_wake_) on_wake_({kAnything});  // whatever was said meanwhile
        break;
      }
    }
  }
}

void WakeBus::Publish(const std::string& what) {
  absl::MutexLock l(&publish_mu_);
  if (publisher_ == nullptr || !publisher_->ok()) {
    auto c = PgConnection::Open(uri_, /*connect_timeout_s=*/2);
    if (!c.ok()) {
      LogWarn("cannot tell the other nodes of a change; they see it at their next resync",
              {{"error", c.status().ToString()}});
      return;
    }
    publisher_ = *std::move(c);
  }
  auto r = publisher_->Exec("SELECT pg_notify($1, $2)", {std::string(kChannel), what});
  if (!r.ok() && !publisher_->ok() && publisher_->Reset().ok()) {
    // The connection was found dead (the database restarted or failed
    // over): once more on a new one.
    r = publisher_->Exec("SELECT pg_notify($1, $2)", {std::string(kChannel), what});
  }
  if (!r.ok()) {
    LogWarn("cannot tell the other nodes of a change; they see it at their next resync",
            {{"error", r.status().ToString()}});
  }
}

void WakeBus::Stop() {
  if (stop_.exchange(true)) return;
  if (wake_pipe_[1] >= 0) (void)!write(wake_pipe_[1], "x", 1);
  if (loop_.joinable()) loop_.join();
}

}  // namespace mariposa
