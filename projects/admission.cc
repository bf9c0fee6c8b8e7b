#include "projects/admission.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mariposa {
namespace {

enum class Cell { kReject, kTerminate, kFifo, kConcurrent };

// QUEUE.md, "What may run together": rows are the task already queued or
// active, columns the task being added; order start, stop, scale,
// reprovision, freeze, run. A run (a scheduled or event service's) goes
// with every other kind: its concurrency policy is the service's (Decide).
// A freeze (and `queue terminate`, which adds one) ends it like any task.
constexpr Cell kTable[6][6] = {
    /* start       */ {Cell::kReject, Cell::kTerminate, Cell::kFifo, Cell::kFifo, Cell::kTerminate, Cell::kConcurrent},
    /* stop        */ {Cell::kReject, Cell::kReject, Cell::kReject, Cell::kReject, Cell::kTerminate, Cell::kConcurrent},
    /* scale       */ {Cell::kFifo, Cell::kTerminate, Cell::kReject, Cell::kConcurrent, Cell::kTerminate, Cell::kConcurrent},
    /* reprovision */ {Cell::kFifo, Cell::kTerminate, Cell::kConcurrent, Cell::kTerminate, Cell::kTerminate, Cell::kConcurrent},
    /* freeze      */ {Cell::kTerminate, Cell::kTerminate, Cell::kTerminate, Cell::kTerminate, Cell::kReject, Cell::kReject},
    /* run         */ {Cell::kConcurrent, Cell::kConcurrent, Cell::kConcurrent, Cell::kConcurrent, Cell::kTerminate,
                       Cell::kConcurrent},
};

std::string Scope(const std::set<std::string>& s) {
  return s.empty() ? "the whole project" : absl::StrCat("services ", absl::StrJoin(s, ","));
}

}  // namespace

const char* KindName(TaskKind k) {
  static const char* kNames[] = {"start", "stop", "scale", "reprovision", "freeze", "run"};
  return kNames[static_cast<int>(k)];
}

bool Overlaps(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() || b.empty()) return true;
  for (const auto& s : a) {
    if (b.count(s)) return true;
  }
  return false;
}

Admission Admit(const std::vector<TaskInfo>& existing, const TaskInfo& in) {
  Admission out;
  for (const TaskInfo& t : existing) {
    if (!Overlaps(t.services, in.services)) continue;
    if (t.kind == TaskKind::kFreeze && in.kind != TaskKind::kFreeze) {
      // A freeze with --only suspends just those kinds of automatic work.
      bool applies = in.automatic ? (t.only.empty() || t.only.count(in.auto_kind) > 0) : t.only.empty();
      if (!applies) continue;
      if (!in.automatic && in.thaw) {
        out.terminate.push_back(t.uuid);
        continue;
      }
      out.verdict = Verdict::kReject;
      out.message = in.automatic
                        ? absl::StrCat("automatic ", KindName(in.kind), " not created: ", Scope(t.services),
                                       " is frozen (task ", t.uuid, ")")
                        : absl::StrCat("project is frozen since ", t.frozen_since, " by ", t.frozen_by,
                                       t.reason.empty() ? "" : absl::StrCat(" (", t.reason, ")"), " for ",
                                       Scope(t.services), "; thaw first (`mariposa thaw`) or repeat with --thaw");
      return out;
    }
    switch (kTable[static_cast<int>(t.kind)][static_cast<int>(in.kind)]) {
      case Cell::kReject:
        out.verdict = Verdict::kReject;
        out.message = absl::StrCat("cannot add ", KindName(in.kind), " for ", Scope(in.services), ": ",
                                   KindName(t.kind), " task ", t.uuid, " on ", Scope(t.services),
                                   " is still queued or active; wait for it or terminate it (`mariposa queue terminate ",
                                   t.uuid, "`)");
        return out;
      case Cell::kTerminate:
        out.terminate.push_back(t.uuid);
        break;
      case Cell::kFifo:
        out.wait_for.push_back(t.uuid);
        break;
      case Cell::kConcurrent:
        break;
    }
  }
  return out;
}

}  // namespace mariposa
