// mariposa image list|get|avail|changes|import|create.
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "cli/plan_text.h"

namespace mariposa::cmd {
namespace {

std::string Label(const v1::Image& i) { return absl::StrCat(i.name(), "@", i.version()); }

void ImageTable(Context& c, const google::protobuf::RepeatedPtrField<v1::Image>& images) {
  Rows rows;
  for (const v1::Image& i : images) {
    rows.push_back({i.uuid(), i.name(), i.version(), i.type(), i.state(), cli::HumanBytes(i.size()), i.published_at(),
                    absl::StrJoin(i.channels(), ",")});
  }
  c.Table({"UUID", "NAME", "VERSION", "TYPE", "STATE", "SIZE", "PUBLISHED", "CHANNELS"}, rows);
}

Result ListImages(Context& c, const Parsed& p) {
  v1::ListImagesRequest req;
  if (!p.args().empty()) req.set_name(p.args()[0]);
  req.set_source(p.Has("--source"));
  v1::ListImagesResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->List(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  if (req.source()) c.out() << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
  ImageTable(c, resp.images());
  return 0;
}

Result GetImage(Context& c, const Parsed& p) {
  v1::GetImageRequest req;
  req.set_image(p.args()[0]);
  v1::GetImageResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->Get(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp.image())) return 0;
  const v1::Image& i = resp.image();
  std::ostream& out = c.out();
  out << Label(i) << " " << i.uuid() << "\n  where:     "
      << (i.where() == "source" ? "only in the image source (imported when a service needs it)" : "IMGAPI")
      << "\n  type:      " << i.type() << " (os " << i.os() << ")\n  size:      " << cli::HumanBytes(i.size())
      << "\n  published: " << i.published_at() << "\n";
  if (!i.origin().empty()) out << "  origin:    " << i.origin() << "\n";
  if (i.channels_size() > 0) out << "  channels:  " << absl::StrJoin(i.channels(), ", ") << "\n";
  if (!i.changes().empty()) out << "  changes:\n    " << absl::StrReplaceAll(i.changes(), {{"\n", "\n    "}}) << "\n";
  return 0;
}

Result Avail(Context& c, const Parsed& p) {
  v1::AvailRequest req;
  req.set_project(c.project());
  for (const std::string& s : p.args()) req.add_services(s);
  req.set_all(p.Has("--all"));
  v1::AvailResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->Avail(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  Rows rows;
  int errors = 0;
  for (const v1::AvailService& s : resp.services()) {
    std::string current = s.error().empty() ? Label(s.current()) : s.current().name() + " (?)";
    if (!s.error().empty()) {
      ++errors;
      c.err() << "mariposa: " << s.project() << "/" << s.service() << ": " << s.error() << "\n";
    }
    if (s.newer_size() == 0) {
      rows.push_back({s.project(), s.service(), current, s.error().empty() ? "up to date" : "unknown", "", ""});
    }
    for (const v1::Image& n : s.newer()) {
      rows.push_back({s.project(), s.service(), current, n.version(), n.uuid(), cli::HumanBytes(n.size())});
    }
  }
  c.out() << "image source " << resp.source() << " (channel " << resp.channel() << ")\n";
  c.Table({"PROJECT", "SERVICE", "CURRENT", "AVAILABLE", "UUID", "SIZE"}, rows);
  return errors > 0 ? 1 : 0;
}

Result Changes(Context& c, const Parsed& p) {
  const auto& a = p.args();
  v1::ChangesRequest req;
  if (a.size() == 3) {
    req.set_name(a[0]);
    req.set_from(a[1]);
    req.set_to(a[2]);
  } else {
    size_t at1 = a[0].rfind('@'), at2 = a[1].rfind('@');
    if (at1 == std::string::npos) return Usage("expected image changes NAME FROM TO (or NAME@FROM NAME@TO)");
    req.set_name(a[0].substr(0, at1));
    req.set_from(a[0].substr(at1 + 1));
    req.set_to(at2 == std::string::npos ? a[1] : a[1].substr(at2 + 1));
  }
  v1::ChangesResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->Changes(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << req.name() << " " << req.from() << " -> " << req.to() << ": " << resp.images_size()
          << (resp.images_size() == 1 ? " version\n" : " versions\n");
  for (const v1::Image& i : resp.images()) {
    c.out() << "\n" << i.version() << " (" << i.uuid() << ", published " << i.published_at() << ")\n";
    c.out() << (i.changes().empty() ? "  (no change log)" : "  " + absl::StrReplaceAll(i.changes(), {{"\n", "\n  "}}))
            << "\n";
  }
  return 0;
}

Result Import(Context& c, const Parsed& p) {
  v1::ImportImageRequest req;
  req.set_image(p.args()[0]);
  v1::ImportImageResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->Import(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  if (resp.already()) {
    c.out() << Label(resp.image()) << " (" << resp.image().uuid() << ") is in IMGAPI already\n";
  } else {
    c.out() << "imported " << Label(resp.image()) << " (" << resp.image().uuid() << ", "
            << cli::HumanBytes(resp.image().size()) << ") into IMGAPI; job " << resp.job_uuid() << "\n";
  }
  return 0;
}

Result Create(Context& c, const Parsed& p) {
  auto from = p.Value("--from");
  auto name = p.Value("--name");
  auto version = p.Value("--version");
  if (!from || !name || !version) return Usage("image create needs --from INSTANCE, --name and --version");
  v1::CreateImageRequest req;
  req.set_instance(*from);
  req.set_name(*name);
  req.set_version(*version);
  if (auto prepare = p.Value("--prepare")) {
    std::ifstream f(*prepare, std::ios::binary);
    if (!f) return Err(absl::StrCat("cannot read the prepare script ", *prepare));
    std::stringstream text;
    text << f.rdbuf();
    req.set_prepare_script(text.str());
  }
  v1::CreateImageResponse resp;
  RETURN_IF_ERROR(c.d().Check(c.d().images->Create(c.d().Ctx().get(), req, &resp)));
  if (c.PrintIfStructured(resp)) return 0;
  c.out() << "created " << Label(resp.image()) << " (" << resp.image().uuid() << ") from " << *from << "; job "
          << resp.job_uuid() << ":\n";
  for (const std::string& step : resp.steps()) c.out() << "  " << step << "\n";
  c.out() << "use it in a manifest as image: " << Label(resp.image()) << "\n";
  return 0;
}

}  // namespace

void AddImage(cli::Registry& r) {
  const std::string g = "Images (IMGAPI and the image source)";
  r.Add({.path = "image list", .args = "[NAME]", .summary = "images in IMGAPI, or in the source's channel",
         .group = g, .flags = {{{"--source"}, "", "list the image source's channel instead of IMGAPI"}},
         .max_args = 1, .run = ListImages});
  r.Add({.path = "image get", .args = "IMAGE", .summary = "one image (uuid or name@version)", .group = g,
         .min_args = 1, .max_args = 1, .run = GetImage});
  r.Add({.path = "image avail",
         .args = "[SERVICE ...]",
         .summary = "newer versions of the services' images in the source",
         .help = "For each service (of -j PROJECT, or of every project) the newest version in the image source\n"
                 "(mariposad's --image-source and --image-channel), or every newer one with --all, like\n"
                 "`sdcadm avail`. Exit 1 when a service's could not be read.",
         .group = g,
         .flags = {{{"--all"}, "", "every newer version, not only the newest"}},
         .max_args = -1,
         .project = ProjectUse::kOptional,
         .run = Avail});
  r.Add({.path = "image changes", .args = "NAME FROM TO", .summary = "the change log from one version to another",
         .help = "Also NAME@FROM NAME@TO.", .group = g, .min_args = 2, .max_args = 3, .run = Changes});
  r.Add({.path = "image import", .args = "IMAGE", .summary = "import from the source into IMGAPI (waits)",
         .help = "A manifest may name an image that is only in the source: the task that needs it imports it first.",
         .group = g, .min_args = 1, .max_args = 1, .run = Import});
  r.Add({.path = "image create",
         .summary = "an image of a prototype instance (waits)",
         .help = "IMGAPI create-from-vm of the prototype INSTANCE (its uuid): it is stopped and snapshotted, booted\n"
                 "with the prepare-image script (and --prepare FILE, the operator's own) running before any of its\n"
                 "services, imaged, rolled back, and started again if it was running. Prints the job's steps.",
         .group = g,
         .flags = {{{"--from"}, "INSTANCE", "the prototype instance's uuid"},
                   {{"--name"}, "NAME", "the image's name"},
                   {{"--version"}, "VERSION", "the image's version"},
                   {{"--prepare"}, "FILE", "a script run in the instance before imaging"}},
         .run = Create});
  r.Alias("images", "image");
}

}  // namespace mariposa::cmd
