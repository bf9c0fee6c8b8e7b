// Color for a terminal: on when stdout is a TTY, unless --no-color or the
// NO_COLOR environment variable (no-color.org) says otherwise. Only words
// that carry a verdict or state, and plan lines, are painted; text piped to
// another program or a file has no escape codes.
#ifndef MARIPOSA_CLI_STYLE_H_
#define MARIPOSA_CLI_STYLE_H_

#include <string>
#include <string_view>

namespace mariposa::cli {

enum class Tone { kNone, kGood, kWarn, kBad, kNote };

// Whether to color (pure, for tests): `no_color_env` is NO_COLOR's value
// (nullptr when unset; set to anything, even empty, turns color off).
bool ColorWanted(bool no_color_flag, const char* no_color_env, bool stdout_is_tty);
void SetColor(bool on);
bool ColorOn();

// The tone of a table cell: converged/completed/running/ok are good,
// progressing/provisioning/paused/frozen warn, degraded/failed/broken/
// unhealthy/unknown are bad; anything else none.
Tone ToneOf(std::string_view cell);
// `text` in the tone's color when color is on; `text` itself otherwise.
std::string Paint(std::string_view text, Tone tone);
// A plan line: "+ …" good, "- …" bad, "~ …" warn (after leading spaces).
std::string PaintPlanLine(std::string_view line);

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_STYLE_H_
