#include "projects/cron.h"

#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace mariposa {
namespace {

struct Field {
  const char* name;
  int min, max;
  std::vector<std::string> names;  // names[k] stands for min + k ("" = none)
};

const Field kFields[] = {
    {"minute", 0, 59, {}},
    {"hour", 0, 23, {}},
    {"day of month", 1, 31, {}},
    {"month", 1, 12, {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
    {"day of week", 0, 7, {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
};

bool Value(const Field& f, const std::string& text, int* out) {
  std::string up = absl::AsciiStrToUpper(text);
  for (size_t k = 0; k < f.names.size(); ++k) {
    if (f.names[k] == up) {
      *out = f.min + static_cast<int>(k);
      return true;
    }
  }
  return absl::SimpleAtoi(text, out) && *out >= f.min && *out <= f.max;
}

// One field into `bits` (index = value); false with `why` when it does not parse.
bool ParseField(const Field& f, const std::string& text, std::vector<bool>* bits, std::string* why) {
  bits->assign(f.max + 1, false);
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    std::string range = part;
    int step = 1;
    if (size_t slash = part.find('/'); slash != std::string::npos) {
      range = part.substr(0, slash);
      if (!absl::SimpleAtoi(part.substr(slash + 1), &step) || step < 1 || step > f.max) {
        *why = absl::StrCat("\"", part, "\": the step after / is a number from 1 to ", f.max);
        return false;
      }
    }
    int lo = f.min, hi = f.max;
    if (range != "*") {
      size_t dash = range.find('-');
      if (!Value(f, range.substr(0, dash), &lo) ||
          (dash != std::string::npos && !Value(f, range.substr(dash + 1), &hi)) || (dash != std::string::npos && hi < lo)) {
        *why = absl::StrCat("\"", part, "\" is not a value, range or step of ", f.min, "-", f.max,
                            f.names.empty() ? "" : " (or a name such as " + f.names[1] + ")");
        return false;
      }
      if (dash == std::string::npos && part.find('/') == std::string::npos) hi = lo;
      else if (dash == std::string::npos) hi = f.max;  // "5/15": from 5 on
    }
    for (int v = lo; v <= hi; v += step) (*bits)[v] = true;
  }
  return true;
}

bool Matches(const CronSpec& s, const absl::CivilDay& d) {
  bool dom = s.days[d.day()];
  bool dow = s.weekdays[(static_cast<int>(absl::GetWeekday(d)) + 1) % 7];  // absl: Monday 0; cron: Sunday 0
  if (!s.months[d.month()]) return false;
  if (s.any_day && s.any_weekday) return true;
  if (s.any_day) return dow;
  if (s.any_weekday) return dom;
  return dom || dow;
}

}  // namespace

absl::StatusOr<CronSpec> ParseCron(const std::string& raw) {
  static const std::map<std::string, std::string> kMacros = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"}};
  std::string text(absl::StripAsciiWhitespace(raw));
  if (auto m = kMacros.find(text); m != kMacros.end()) text = m->second;
  std::vector<std::string> fields = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", raw, "\" has ", fields.size(), " fields; a schedule has five: minute hour day-of-month month "
        "day-of-week (e.g. \"*/15 * * * *\", \"0 3 * * MON-FRI\"), or @hourly, @daily, @weekly, @monthly, @yearly"));
  }
  CronSpec s;
  std::vector<bool> bits;
  for (int k = 0; k < 5; ++k) {
    std::string why;
    if (!ParseField(kFields[k], fields[k], &bits, &why)) {
      return absl::InvalidArgumentError(absl::StrCat(kFields[k].name, ": ", why));
    }
    for (int v = kFields[k].min; v <= kFields[k].max; ++v) {
      if (!bits[v]) continue;
      switch (k) {
        case 0: s.minutes[v] = true; break;
        case 1: s.hours[v] = true; break;
        case 2: s.days[v] = true; break;
        case 3: s.months[v] = true; break;
        case 4: s.weekdays[v % 7] = true; break;  // 7 is Sunday too
      }
    }
  }
  s.any_day = fields[2] == "*" || fields[2] == "?";
  s.any_weekday = fields[4] == "*" || fields[4] == "?";
  return s;
}

std::optional<absl::Time> NextFire(const CronSpec& spec, const absl::TimeZone& tz, absl::Time after) {
  absl::CivilMinute from = absl::ToCivilMinute(after, tz) + 1;
  absl::CivilDay day = absl::CivilDay(from);
  for (int n = 0; n < 5 * 366; ++n, ++day) {
    if (!Matches(spec, day)) continue;
    for (int h = (day == absl::CivilDay(from) ? from.hour() : 0); h < 24; ++h) {
      if (!spec.hours[h]) continue;
      int m0 = day == absl::CivilDay(from) && h == from.hour() ? from.minute() : 0;
      for (int m = m0; m < 60; ++m) {
        if (!spec.minutes[m]) continue;
        absl::TimeZone::TimeInfo ti = tz.At(absl::CivilMinute(day.year(), day.month(), day.day(), h, m));
        // skipped: the instant after the gap; repeated: the first occurrence.
        absl::Time t = ti.kind == absl::TimeZone::TimeInfo::SKIPPED ? ti.trans : ti.pre;
        if (ti.kind == absl::TimeZone::TimeInfo::REPEATED) t = std::min(ti.pre, ti.post);
        if (t > after) return t;
      }
    }
  }
  return std::nullopt;
}

std::optional<absl::Time> LastFire(const CronSpec& spec, const absl::TimeZone& tz, absl::Time at,
                                   absl::Duration horizon) {
  std::optional<absl::Time> last;
  absl::Time from = at - horizon;
  // Forward from the horizon: schedules fire at most once a minute, and the
  // horizons asked are short (a starting deadline, a day).
  for (auto t = NextFire(spec, tz, from - absl::Nanoseconds(1)); t && *t <= at; t = NextFire(spec, tz, *t)) last = t;
  return last;
}

}  // namespace mariposa
