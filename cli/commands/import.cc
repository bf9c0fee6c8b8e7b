// mariposa import compose: a manifest from a docker-compose.yml
// (projects/compose.h), written out with every key it could not translate
// listed by line. Runs here, without mariposad.
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "projects/compose.h"

namespace mariposa::cmd {
namespace {

Result ImportComposeFile(Context& c, const Parsed& p) {
  const std::string& file = p.args()[0];
  ASSIGN_OR_RETURN(std::string text, c.ReadInput(file));
  ComposeOptions o;
  o.project = p.Value("--project").value_or(c.project());
  ASSIGN_OR_RETURN(int64_t vlan, p.Int("--vlan", 0, 0));
  if (vlan != 0 && (vlan < 2 || vlan > 4094)) return Usage("--vlan: a fabric VLAN id is 2 to 4094");
  o.vlan = static_cast<int>(vlan);
  // env_file paths are relative to the Compose file, as Compose reads them.
  std::string dir = file == "-" ? "." : file.substr(0, file.rfind('/') == std::string::npos ? 0 : file.rfind('/'));
  if (dir.empty()) dir = ".";
  for (const std::string& env : ComposeEnvFiles(text)) {
    std::ifstream in(env.empty() || env[0] == '/' ? env : dir + "/" + env);
    if (!in) continue;  // noted by the import, with its line
    std::stringstream read;
    read << in.rdbuf();
    o.env_files[env] = read.str();
  }
  auto imported = ImportCompose(text, o);
  if (!imported.ok()) return Err(absl::StrCat(file, ": ", imported.status().message()));
  if (imported->services == 0) {
    for (const ComposeNote& n : imported->notes) c.err() << file << ":" << n.line << ": " << n.path << ": " << n.why << "\n";
    return Err(absl::StrCat(file, ": no service could be translated (each needs an image:); nothing was written"));
  }
  std::string header = absl::StrCat("# Imported from ", file, " by `mariposa import compose`.\n");
  if (!imported->notes.empty()) {
    absl::StrAppend(&header, "# ", imported->notes.size(), " note(s) on keys not translated or changed; `mariposa import "
                             "compose` listed them with their lines.\n");
  }
  if (auto out = p.Value("--out")) {
    std::ofstream f(*out, std::ios::trunc);
    if (!(f << header << imported->manifest)) return Err(absl::StrCat("--out ", *out, ": cannot be written"));
    c.err() << "wrote " << *out << ": " << imported->services << " service(s)\n";
  } else {
    c.out() << header << imported->manifest;
  }
  for (const ComposeNote& n : imported->notes) {
    c.err() << file << ":" << (n.line > 0 ? absl::StrCat(n.line, ": ") : std::string(" ")) << n.path << ": " << n.why
            << "\n";
  }
  if (!imported->notes.empty()) {
    c.err() << imported->notes.size() << " note(s) on keys not translated or changed (above); check them before "
               "`mariposa apply`\n";
  }
  return 0;
}

}  // namespace

void AddImport(cli::Registry& r) {
  r.Add({.path = "import compose",
         .args = "FILE",
         .summary = "a manifest from a docker-compose.yml, listing what it could not translate",
         .help = "Writes a Mariposa manifest (stdout, or --out FILE) from a Compose file: images, command,\n"
                 "environment and env_file, ports, labels (tags), deploy.replicas (count), resources, restart,\n"
                 "an HTTP healthcheck (an http check), named volumes and, with --vlan, networks (a fabric).\n"
                 "Every key it could not translate is listed on stderr with its line and why (a build:, a\n"
                 "bind mount, depends_on, …). ${VAR} becomes {{ .meta.VAR }}. Runs without mariposad.\n"
                 "The project is -j PROJECT, --project NAME, or the file's name:.",
         .group = "Projects",
         .flags = {{{"--project"}, "NAME", "the manifest's project (default: -j, else the file's name:)"},
                   {{"--vlan"}, "N", "the fabric VLAN id (2-4094) Compose's networks go on; without it they are listed"},
                   {{"--out"}, "FILE", "write the manifest there, not to stdout"}},
         .min_args = 1,
         .max_args = 1,
         .project = cli::ProjectUse::kOptional,
         .daemon = false,
         .run = ImportComposeFile});
}

}  // namespace mariposa::cmd
