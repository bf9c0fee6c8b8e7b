// mariposa image and core.
#include "cli/cli.h"

namespace mariposa::cmd {

namespace {

std::string ImageLabel(const v1::Image& i) { return absl::StrCat(i.name(), "@", i.version()); }


}  // namespace

int Cli::ImageCmd(Args& a) {
  bool source = a.Flag({"--source"});
  bool all = a.Flag({"--all"});
  auto from = a.Value({"--from"});
  auto name = a.Value({"--name"});
  auto version = a.Value({"--version"});
  auto prepare = a.Value({"--prepare"});
  std::vector<std::string> rest = a.Positional(1, 1000, "image list|get|avail|changes|import|create");
  const std::string& sub = rest[0];
  auto count = [&](size_t min, size_t max, const char* what) {
    if (rest.size() < min || rest.size() > max) throw UsageError{absl::StrCat("expected ", what)};
  };
  auto table = [](const google::protobuf::RepeatedPtrField<v1::Image>& images) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::Image& i : images) {
      rows.push_back({i.uuid(), i.name(), i.version(), i.type(), i.state(), cli::HumanBytes(i.size()), i.published_at(),
                      absl::StrJoin(i.channels(), ",")});
    }
    Table({"UUID", "NAME", "VERSION", "TYPE", "STATE", "SIZE", "PUBLISHED", "CHANNELS"}, rows);
  };
  if (sub == "list") {
    count(1, 2, "image list [NAME] [--source]");
    v1::ListImagesRequest req;
    if (rest.size() > 1) req.set_name(rest[1]);
    req.set_source(source);
    v1::ListImagesResponse resp;
    Check(images_->List(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    if (source) std::cout << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
    table(resp.images());
    return 0;
  }
  if (sub == "get") {
    count(2, 2, "image get IMAGE");
    v1::GetImageRequest req;
    req.set_image(rest[1]);
    v1::GetImageResponse resp;
    Check(images_->Get(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp.image());
      return 0;
    }
    const v1::Image& i = resp.image();
    std::cout << ImageLabel(i) << " " << i.uuid() << "\n  where:     "
              << (i.where() == "source" ? "only in the image source (imported when a service needs it)" : "IMGAPI")
              << "\n  type:      " << i.type() << " (os " << i.os() << ")\n  size:      " << cli::HumanBytes(i.size())
              << "\n  published: " << i.published_at() << "\n";
    if (!i.origin().empty()) std::cout << "  origin:    " << i.origin() << "\n";
    if (i.channels_size() > 0) std::cout << "  channels:  " << absl::StrJoin(i.channels(), ", ") << "\n";
    if (!i.changes().empty()) std::cout << "  changes:\n    " << absl::StrReplaceAll(i.changes(), {{"\n", "\n    "}}) << "\n";
    return 0;
  }
  if (sub == "avail") {

    v1::AvailRequest req;
    req.set_project(project_);
    for (size_t k = 1; k < rest.size(); ++k) req.add_services(rest[k]);
    req.set_all(all);
    v1::AvailResponse resp;
    Check(images_->Avail(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows;
    int errors = 0;
    for (const v1::AvailService& s : resp.services()) {
      std::string current = s.error().empty() ? ImageLabel(s.current()) : s.current().name() + " (?)";
      if (!s.error().empty()) {
        ++errors;
        std::cerr << "mariposa: " << s.project() << "/" << s.service() << ": " << s.error() << "\n";
      }
      if (s.newer_size() == 0) {
        rows.push_back({s.project(), s.service(), current, s.error().empty() ? "up to date" : "unknown", "", ""});
      }
      for (const v1::Image& n : s.newer()) {
        rows.push_back({s.project(), s.service(), current, n.version(), n.uuid(), cli::HumanBytes(n.size())});
      }
    }
    std::cout << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
    Table({"PROJECT", "SERVICE", "CURRENT", "AVAILABLE", "UUID", "SIZE"}, rows);
    return errors > 0 ? 1 : 0;
  }
  if (sub == "changes") {
    count(3, 4, "image changes NAME FROM TO (or NAME@FROM NAME@TO)");
    v1::ChangesRequest req;
    if (rest.size() == 4) {
      req.set_name(rest[1]);
      req.set_from(rest[2]);
      req.set_to(rest[3]);
    } else {
      size_t at1 = rest[1].rfind('@'), at2 = rest[2].rfind('@');
      if (at1 == std::string::npos) throw UsageError{"expected image changes NAME FROM TO (or NAME@FROM NAME@TO)"};
      req.set_name(rest[1].substr(0, at1));
      req.set_from(rest[1].substr(at1 + 1));
      req.set_to(at2 == std::string::npos ? rest[2] : rest[2].substr(at2 + 1));
    }
    v1::ChangesResponse resp;
    Check(images_->Changes(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << req.name() << " " << req.from() << " -> " << req.to() << ": " << resp.images_size()
              << (resp.images_size() == 1 ? " version\n" : " versions\n");
    for (const v1::Image& i : resp.images()) {
      std::cout << "\n" << i.version() << " (" << i.uuid() << ", published " << i.published_at() << ")\n";
      std::cout << (i.changes().empty() ? "  (no change log)" : "  " + absl::StrReplaceAll(i.changes(), {{"\n", "\n  "}}))
                << "\n";
    }
    return 0;
  }
  if (sub == "import") {
    count(2, 2, "image import IMAGE");
    v1::ImportImageRequest req;
    req.set_image(rest[1]);
    v1::ImportImageResponse resp;
    Check(images_->Import(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    if (resp.already()) std::cout << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ") is in IMGAPI already\n";
    else std::cout << "imported " << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ", "
                   << cli::HumanBytes(resp.image().size()) << ") into IMGAPI; job " << resp.job_uuid() << "\n";
    return 0;
  }
  if (sub == "create") {
    count(1, 1, "image create --from INSTANCE --name NAME --version VERSION [--prepare FILE]");
    if (!from || !name || !version) throw UsageError{"image create needs --from INSTANCE, --name and --version"};
    v1::CreateImageRequest req;
    req.set_instance(*from);
    req.set_name(*name);
    req.set_version(*version);
    if (prepare) {
      std::ifstream f(*prepare, std::ios::binary);
      if (!f) throw Error{absl::StrCat("cannot read the prepare script ", *prepare)};
      std::stringstream text;
      text << f.rdbuf();
      req.set_prepare_script(text.str());
    }
    v1::CreateImageResponse resp;
    Check(images_->Create(Ctx().get(), req, &resp));
    if (Structured()) {
      Print(resp);
      return 0;
    }
    std::cout << "created " << ImageLabel(resp.image()) << " (" << resp.image().uuid() << ") from " << *from
              << "; job " << resp.job_uuid() << ":\n";
    for (const std::string& step : resp.steps()) std::cout << "  " << step << "\n";
    std::cout << "use it in a manifest as image: " << ImageLabel(resp.image()) << "\n";
    return 0;
  }
  throw UsageError{absl::StrCat("unknown image subcommand \"", sub, "\": list, get, avail, changes, import or create")};
}

// `core check`: CNAPI's server.agents against the goal of the project's
// agent services; every drift on a line; exit 1 when there is one.
int Cli::CoreCmd(Args& a) {
  auto rest = a.Positional(1, 1, "core check");
  if (rest[0] != "check") throw UsageError{absl::StrCat("unknown core subcommand \"", rest[0], "\": check")};
  v1::GetStateRequest req;
  req.set_project(NeedProject());
  v1::GetStateResponse resp;
  Check(state_->GetState(Ctx().get(), req, &resp));
  struct Drift {
    std::string service, hostname, server, kind, detail;
  };
  std::vector<Drift> drifts;
  int agents = 0, servers = 0;
  for (const auto& s : resp.services()) {
    if (!s.agent()) continue;
    ++agents;
    std::string want = s.reason();
    for (const auto& sv : s.servers()) {
      ++servers;
      const std::string& st = sv.state();
      if (st == "excluded") {
        continue;  // left alone on purpose
      } else if (st == "not-selected") {
        if (!sv.version().empty()) {
          drifts.push_back({s.name(), sv.hostname(), sv.server(), "installed by hand",
                            absl::StrCat(sv.version(), " runs on a server servers.select does not cover")});
        }
      } else if (st != "current" && st != "installing") {
        drifts.push_back({s.name(), sv.hostname(), sv.server(), sv.version().empty() ? "missing" : "wrong version",
                          absl::StrCat(sv.version().empty() ? "not installed" : sv.version(), " (", st,
                                       sv.error().empty() ? "" : ": " + sv.error(), ")")});
      }
    }
  }
  if (Structured()) {
    std::vector<Record> records;
    for (const Drift& d : drifts) {
      records.push_back({{"service", d.service},
                         {"hostname", d.hostname},
                         {"server", d.server},
                         {"drift", d.kind},
                         {"detail", d.detail}});
    }
    PrintRecords(records);
    return drifts.empty() ? 0 : 1;
  }
  if (agents == 0) {
    std::cout << "project " << resp.project() << " has no agent services (compute_type: agent)\n";
    return 0;
  }
  if (drifts.empty()) {
    std::cout << "no drift: " << agents << " agent services on " << servers << " server entries match the goal\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Drift& d : drifts) rows.push_back({d.service, d.hostname, d.server, d.kind, d.detail});
  Table({"SERVICE", "HOSTNAME", "SERVER", "DRIFT", "DETAIL"}, rows);
  std::cout << "\n" << drifts.size() << " drifts; `mariposa reprovision --service SERVICE` installs the goal's "
            << "version again; an agent installed by hand is removed with CNAPI's uninstall-agents\n";
  return 1;
}

}  // namespace mariposa::cmd
