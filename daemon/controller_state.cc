#include "daemon/controller_state.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace mariposa {
namespace {
constexpr char kKey[] = "controller.state";
}  // namespace

std::string EncodeMode(const ControllerMode& m) {
  nlohmann::json j;
  j["mode"] = m.mode;
  j["reason"] = m.reason;
  j["since"] = absl::ToUnixSeconds(m.since);
  j["by"] = m.by;
  return j.dump();
}

absl::StatusOr<ControllerMode> DecodeMode(const std::string& text) {
  ControllerMode m;
  if (text.empty()) return m;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("mode") || !j["mode"].is_string()) {
    return absl::DataLossError(absl::StrCat("the stored controller state is not readable: ", text));
  }
  m.mode = j["mode"].get<std::string>();
  if (m.mode != "active" && m.mode != "readonly") {
    return absl::DataLossError(absl::StrCat("the stored controller state \"", m.mode, "\" is unknown"));
  }
  m.reason = j.value("reason", "");
  m.by = j.value("by", "");
  if (j.contains("since") && j["since"].is_number_integer()) m.since = absl::FromUnixSeconds(j["since"].get<int64_t>());
  return m;
}

bool ModeProblem(const ControllerMode& m, v1::Problem* p) {
  if (m.mode != "readonly") return false;
  p->set_kind("readonly");
  p->set_error(absl::StrCat("mariposad is readonly: ", m.reason));
  p->set_reason(absl::StrCat("set by ", m.by, " at ",
                             absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", m.since, absl::UTCTimeZone())));
  p->set_fix("when the work that needed it is done: mariposa admin state set active");
  p->set_impact("reads work; every change is refused (UNAVAILABLE) and nothing is converged or replaced");
  return true;
}

grpc::Status GateCall(const ControllerMode& m, const auth::MethodRule& rule) {
  if (m.mode != "readonly" || !rule.writes) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::UNAVAILABLE,
      absl::StrCat("mariposad is readonly (since ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", m.since, absl::UTCTimeZone()),
                   ", by ", m.by, "): ", m.reason, "; reads work, changes do not. An admin ends it with "
                   "`mariposa admin state set active`"));
}

absl::Status ControllerState::Load() {
  auto text = store_->GetSetting(kKey);
  if (!text.ok()) return text.status();
  auto m = DecodeMode(*text);
  if (!m.ok()) return m.status();
  absl::MutexLock l(&mu_);
  mode_ = *m;
  return absl::OkStatus();
}

absl::Status ControllerState::Reload() {
  auto text = store_->GetSetting(kKey);
  if (!text.ok()) return text.status();
  auto m = DecodeMode(*text);
  if (!m.ok()) return m.status();
  {
    absl::MutexLock l(&mu_);
    if (mode_.mode == m->mode && mode_.reason == m->reason && mode_.since == m->since) return absl::OkStatus();
    mode_ = *m;
  }
  if (on_change_) on_change_(*m);
  return absl::OkStatus();
}

ControllerMode ControllerState::Get() const {
  absl::MutexLock l(&mu_);
  return mode_;
}

absl::Status ControllerState::Set(const std::string& mode, const std::string& reason, const std::string& actor) {
  if (mode != "active" && mode != "readonly") {
    return absl::InvalidArgumentError(absl::StrCat(
        "state \"", mode, "\" cannot be set: choose active or readonly (standby and initfail are states of a "
        "mariposad without its store, not settings)"));
  }
  if (mode == "readonly" && reason.empty()) {
    return absl::InvalidArgumentError(
        "readonly needs a reason, which every refused call repeats: --reason \"restoring the store\"");
  }
  ControllerMode next;
  next.mode = mode;
  next.reason = mode == "readonly" ? reason : "";
  next.since = clock_->Now();
  next.by = actor;
  {
    absl::MutexLock l(&mu_);
    if (mode_.mode == mode && mode == "active") return absl::OkStatus();  // nothing to change
    if (absl::Status s = store_->SetSetting(
            kKey, EncodeMode(next), actor, "controller.state",
            mode == "readonly" ? absl::StrCat("readonly: ", reason) : absl::StrCat("active (was ", mode_.mode, ")"));
        !s.ok()) {
      return s;
    }
    mode_ = next;
  }
  if (on_change_) on_change_(next);
  return absl::OkStatus();
}

}  // namespace mariposa
