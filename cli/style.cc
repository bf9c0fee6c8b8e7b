#include "cli/style.h"

#include <atomic>

namespace mariposa::cli {
namespace {
std::atomic<bool> color{false};
}  // namespace

bool ColorWanted(bool no_color_flag, const char* no_color_env, bool stdout_is_tty) {
  return stdout_is_tty && !no_color_flag && no_color_env == nullptr;
}

void SetColor(bool on) { color = on; }
bool ColorOn() { return color; }

Tone ToneOf(std::string_view c) {
  for (std::string_view w : {"converged", "completed", "running", "ok", "healthy", "active", "pass"}) {
    if (c == w) return Tone::kGood;
  }
  for (std::string_view w : {"progressing", "provisioning", "paused", "queued", "frozen", "readonly", "standby",
                             "stopped", "terminating"}) {
    if (c == w) return Tone::kWarn;
  }
  for (std::string_view w : {"degraded", "failed", "broken", "unhealthy", "unknown", "initfail", "fail", "terminated"}) {
    if (c == w) return Tone::kBad;
  }
  return Tone::kNone;
}

std::string Paint(std::string_view text, Tone tone) {
  if (!ColorOn() || tone == Tone::kNone || text.empty()) return std::string(text);
  const char* code = tone == Tone::kGood ? "32" : tone == Tone::kWarn ? "33" : tone == Tone::kBad ? "31" : "36";
  return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

std::string PaintPlanLine(std::string_view line) {
  size_t at = line.find_first_not_of(' ');
  if (at == std::string_view::npos || at + 1 >= line.size() || line[at + 1] != ' ') return std::string(line);
  Tone t = line[at] == '+' ? Tone::kGood : line[at] == '-' ? Tone::kBad : line[at] == '~' ? Tone::kWarn : Tone::kNone;
  return Paint(line, t);
}

}  // namespace mariposa::cli
