// mariposa meta list|get|set|rm|incr|decr|import.
#include <yaml-cpp/yaml.h>

#include "cli/command.h"

namespace mariposa::cmd {
namespace {

absl::StatusOr<std::optional<int64_t>> Cas(const Parsed& p) {
  if (!p.Has("--cas")) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t v, p.Int("--cas", 0, 0));
  return std::optional<int64_t>(v);
}

void EntryLine(Context& c, const v1::MetaEntry& e) {
  if (c.Structured()) c.Print(e);
  else c.out() << e.key() << "=" << e.value() << "  (cas " << e.cas_id() << (e.secret() ? ", secret" : "") << ")\n";
}

Result List(Context& c, const Parsed&) {
  v1::ListMetaRequest req;
  req.set_project(c.project());
  v1::ListMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ListMeta(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  for (const auto& e : resp.entries()) {
    rows.push_back({e.key(), e.value(), e.source(), e.cas_id() ? absl::StrCat(e.cas_id()) : "-", e.secret() ? "yes" : "no"});
  }
  c.Table({"KEY", "VALUE", "SOURCE", "CAS", "SECRET"}, rows);
  return 0;
}

Result Get(Context& c, const Parsed& p) {
  v1::GetMetaRequest req;
  req.set_project(c.project());
  req.set_key(p.args()[0]);
  v1::GetMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->GetMeta(c.d().Ctx().get(), req, &resp)));
  if (c.Structured()) c.Print(resp.entry());
  else c.out() << resp.entry().value() << "\n";
  return 0;
}

Result Set(Context& c, const Parsed& p) {
  const auto& a = p.args();
  bool secret = p.Has("--secret");
  // A secret never goes on the command line, where `ps` and shell history
  // show it: it comes from a prompt or from stdin ("-").
  if (secret && a.size() == 2 && a[1] != "-") {
    return Usage("a secret value is not taken from the command line (ps and shell history show it): "
                 "`mariposa meta set KEY --secret` prompts for it; `… meta set KEY - --secret` reads stdin");
  }
  if (a.size() != 2 && !secret) {
    return Usage("expected meta set KEY VALUE (or KEY --secret, which prompts for the value, or KEY - to read stdin)");
  }
  ASSIGN_OR_RETURN(auto cas, Cas(p));
  std::string value = a.size() == 2 ? a[1] : "-";
  if (value == "-") value = c.ReadValue(absl::StrCat("value of ", a[0], " (not shown): "));
  v1::SetMetaRequest req;
  req.set_project(c.project());
  req.set_key(a[0]);
  req.set_value(value);
  req.set_secret(secret);
  if (cas) req.set_cas_id(*cas);
  v1::SetMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->SetMeta(c.d().Ctx().get(), req, &resp)));
  EntryLine(c, resp.entry());
  PrintStaleMeta(c, req.project());
  return 0;
}

Result Rm(Context& c, const Parsed& p) {
  ASSIGN_OR_RETURN(auto cas, Cas(p));
  v1::DeleteMetaRequest req;
  req.set_project(c.project());
  req.set_key(p.args()[0]);
  if (cas) req.set_cas_id(*cas);
  v1::DeleteMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->DeleteMeta(c.d().Ctx().get(), req, &resp)));
  c.out() << "removed " << req.key() << "\n";
  PrintStaleMeta(c, req.project());
  return 0;
}

Result Incr(Context& c, const Parsed& p, int64_t sign) {
  ASSIGN_OR_RETURN(auto cas, Cas(p));
  const auto& a = p.args();
  int64_t n = 1;
  if (a.size() == 2 && !absl::SimpleAtoi(a[1], &n)) return Usage(absl::StrCat("\"", a[1], "\" is not a whole number"));
  v1::IncrMetaRequest req;
  req.set_project(c.project());
  req.set_key(a[0]);
  req.set_delta(sign * n);
  if (cas) req.set_cas_id(*cas);
  v1::IncrMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->IncrMeta(c.d().Ctx().get(), req, &resp)));
  EntryLine(c, resp.entry());
  PrintStaleMeta(c, req.project());
  return 0;
}

// Flattens a YAML map to dotted keys.
absl::Status Flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out) {
  for (const auto& kv : n) {
    std::string key = prefix.empty() ? kv.first.Scalar() : absl::StrCat(prefix, ".", kv.first.Scalar());
    if (kv.second.IsMap()) RETURN_IF_ERROR(Flatten(kv.second, key, out));
    else if (kv.second.IsScalar() || kv.second.IsNull()) (*out)[key] = kv.second.IsNull() ? "" : kv.second.Scalar();
    else return Err(absl::StrCat("meta import: ", key, " is a list; values must be strings or maps"));
  }
  return absl::OkStatus();
}

Result Import(Context& c, const Parsed& p) {
  const std::string& file = p.args()[0];
  ASSIGN_OR_RETURN(std::string text, c.ReadInput(file));
  std::map<std::string, std::string> entries;
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception&) {
    // not YAML: KEY=VALUE lines
  }
  if (n.IsMap()) {
    RETURN_IF_ERROR(Flatten(n, "", &entries));
  } else {
    int line_no = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++line_no;
      line = absl::StripAsciiWhitespace(line);
      if (line.empty() || line[0] == '#') continue;
      size_t eq = line.find('=');
      if (eq == absl::string_view::npos || eq == 0) {
        return Err(absl::StrCat(file, ":", line_no, ": \"", line, "\" is not KEY=VALUE (or give a YAML/JSON map)"));
      }
      entries[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  }
  v1::ImportMetaRequest req;
  req.set_project(c.project());
  req.mutable_entries()->insert(entries.begin(), entries.end());
  req.set_secret(p.Has("--secret"));
  v1::ImportMetaResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().projects->ImportMeta(c.d().Ctx().get(), req, &resp)));
  c.out() << "imported " << resp.imported() << " keys\n";
  PrintStaleMeta(c, req.project());
  return 0;
}

}  // namespace

void AddMeta(cli::Registry& r) {
  const Flag cas{{"--cas"}, "ID", "write only if the key is still at cas id ID (0: only if it does not exist)"};
  const std::string g = "Metadata";
  const auto req = ProjectUse::kRequired;
  r.Add({.path = "meta list", .summary = "every key: value, source, cas id, secret or not", .group = g,
         .project = req, .run = List});
  r.Add({.path = "meta get", .args = "KEY", .summary = "one value (a secret shows as <secret>)", .group = g,
         .min_args = 1, .max_args = 1, .project = req, .run = Get});
  r.Add({.path = "meta set",
         .args = "KEY [VALUE|-]",
         .summary = "set a value; a secret is prompted for, or read from stdin with -",
         .help = "A secret is never read from the command line (ps and shell history show it): `meta set KEY\n"
                 "--secret` prompts for it without echo, `meta set KEY - --secret` reads stdin. mariposad seals it\n"
                 "(AES-256-GCM) before it reaches the store; it leaves mariposad only inside VMAPI create requests,\n"
                 "and is shown as <secret>.",
         .group = g,
         .flags = {cas, {{"--secret"}, "", "a secret value (sealed; never printed)"}},
         .min_args = 1,
         .max_args = 2,
         .project = req,
         .run = Set});
  r.Add({.path = "meta rm", .args = "KEY", .summary = "remove a key", .group = g, .flags = {cas}, .min_args = 1,
         .max_args = 1, .project = req, .run = Rm});
  r.Add({.path = "meta incr", .args = "KEY [N]", .summary = "add N (1) to a number", .group = g, .flags = {cas},
         .min_args = 1, .max_args = 2, .project = req,
         .run = [](Context& c, const Parsed& p) { return Incr(c, p, 1); }});
  r.Add({.path = "meta decr", .args = "KEY [N]", .summary = "subtract N (1) from a number", .group = g,
         .flags = {cas}, .min_args = 1, .max_args = 2, .project = req,
         .run = [](Context& c, const Parsed& p) { return Incr(c, p, -1); }});
  r.Add({.path = "meta import", .args = "FILE",
         .summary = "many keys from a YAML/JSON map (nested keys dotted) or KEY=VALUE lines",
         .group = g, .flags = {{{"--secret"}, "", "every value is a secret"}}, .min_args = 1, .max_args = 1,
         .project = req, .run = Import});
}

}  // namespace mariposa::cmd
