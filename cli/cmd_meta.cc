// mariposa meta.
#include "cli/cli.h"

namespace mariposa::cmd {

int Cli::Meta(Args& a) {
  bool secret = a.Flag({"--secret"});
  auto cas_text = a.Value({"--cas"});
  std::optional<int64_t> cas;
  if (cas_text) {
    int64_t v;
    if (!absl::SimpleAtoi(*cas_text, &v) || v < 0) throw UsageError{absl::StrCat("--cas needs a cas id, not \"", *cas_text, "\"")};
    cas = v;
  }
  auto rest = a.Positional(1, 3, "meta list|get|set|rm|incr|decr|import");
  const std::string& sub = rest[0];
  auto entry_line = [&](const v1::MetaEntry& e) {
    if (Structured()) {
      Print(e);
    } else {
      std::cout << e.key() << "=" << e.value() << "  (cas " << e.cas_id() << (e.secret() ? ", secret" : "") << ")\n";
    }
  };
  if (sub == "list") {
    v1::ListMetaRequest req;
    req.set_project(NeedProject());
    v1::ListMetaResponse resp;
    Check(projects_->ListMeta(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& e : resp.entries()) {
      rows.push_back({e.key(), e.value(), e.source(), e.cas_id() ? absl::StrCat(e.cas_id()) : "-", e.secret() ? "yes" : "no"});
    }
    Table({"KEY", "VALUE", "SOURCE", "CAS", "SECRET"}, rows);
    return 0;
  }
  if (sub == "get") {
    if (rest.size() != 2) throw UsageError{"expected meta get KEY"};
    v1::GetMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    v1::GetMetaResponse resp;
    Check(projects_->GetMeta(Ctx().get(), req, &resp));
    if (Structured()) Print(resp.entry());
    else std::cout << resp.entry().value() << "\n";
    return 0;
  }
  if (sub == "set") {
    // A secret never goes on the command line, where `ps` and shell history
    // show it: it comes from a prompt or from stdin ("-").
    if (secret && rest.size() == 3 && rest[2] != "-") {
      throw UsageError{"a secret value is not taken from the command line (ps and shell history show it): "
                       "`mariposa meta set KEY --secret` prompts for it; `… meta set KEY - --secret` reads stdin"};
    }
    if (rest.size() != 3 && !(secret && rest.size() == 2)) throw UsageError{"expected meta set KEY VALUE"};
    std::string value = rest.size() == 3 ? rest[2] : "-";
    if (value == "-") value = ReadValue(absl::StrCat("value of ", rest[1], " (not shown): "));
    v1::SetMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    req.set_value(value);
    req.set_secret(secret);
    if (cas) req.set_cas_id(*cas);
    v1::SetMetaResponse resp;
    Check(projects_->SetMeta(Ctx().get(), req, &resp));
    entry_line(resp.entry());
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "rm") {
    if (rest.size() != 2) throw UsageError{"expected meta rm KEY"};
    v1::DeleteMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    if (cas) req.set_cas_id(*cas);
    v1::DeleteMetaResponse resp;
    Check(projects_->DeleteMeta(Ctx().get(), req, &resp));
    std::cout << "removed " << rest[1] << "\n";
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "incr" || sub == "decr") {
    if (rest.size() < 2) throw UsageError{absl::StrCat("expected meta ", sub, " KEY [N]")};
    int64_t n = 1;
    if (rest.size() == 3 && !absl::SimpleAtoi(rest[2], &n)) throw UsageError{absl::StrCat("\"", rest[2], "\" is not a whole number")};
    v1::IncrMetaRequest req;
    req.set_project(NeedProject());
    req.set_key(rest[1]);
    req.set_delta(sub == "incr" ? n : -n);
    if (cas) req.set_cas_id(*cas);
    v1::IncrMetaResponse resp;
    Check(projects_->IncrMeta(Ctx().get(), req, &resp));
    entry_line(resp.entry());
    PrintStaleMeta(req.project());
    return 0;
  }
  if (sub == "import") {
    if (rest.size() != 2) throw UsageError{"expected meta import FILE"};
    std::string text = ReadInput(rest[1]);
    std::map<std::string, std::string> entries;
    YAML::Node n;
    try {
      n = YAML::Load(text);
    } catch (const YAML::Exception&) {
    }
    if (n.IsMap()) {
      Flatten(n, "", &entries);
    } else {
      int line_no = 0;
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        ++line_no;
        line = absl::StripAsciiWhitespace(line);
        if (line.empty() || line[0] == '#') continue;
        size_t eq = line.find('=');
        if (eq == absl::string_view::npos || eq == 0) {
          throw Error{absl::StrCat(rest[1], ":", line_no, ": \"", line, "\" is not KEY=VALUE (or give a YAML/JSON map)")};
        }
        entries[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
      }
    }
    v1::ImportMetaRequest req;
    req.set_project(NeedProject());
    req.mutable_entries()->insert(entries.begin(), entries.end());
    req.set_secret(secret);
    v1::ImportMetaResponse resp;
    Check(projects_->ImportMeta(Ctx().get(), req, &resp));
    std::cout << "imported " << resp.imported() << " keys\n";
    PrintStaleMeta(req.project());
    return 0;
  }
  throw UsageError{"expected meta list|get|set|rm|incr|decr|import"};
}

}  // namespace mariposa::cmd
