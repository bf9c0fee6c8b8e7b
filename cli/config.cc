#include "cli/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"

namespace mariposa::cli {
namespace {

std::string Get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

// "~/x" -> "$HOME/x".
std::string Expand(const std::string& path, const std::map<std::string, std::string>& env) {
  if (path.rfind("~/", 0) == 0) return absl::StrCat(Get(env, "HOME"), path.substr(1));
  return path;
}

const char* const kKeys[] = {"addr", "project", "ca", "cert", "key", "token", "token-file", "triton-profile"};

std::string* Field(Settings& s, const std::string& key) {
  if (key == "addr") return &s.addr;
  if (key == "project") return &s.project;
  if (key == "ca") return &s.ca;
  if (key == "cert") return &s.cert;
  if (key == "key") return &s.key;
  if (key == "token") return &s.token;
  if (key == "token-file") return &s.token_file;
  if (key == "triton-profile") return &s.triton_profile;
  return nullptr;
}

}  // namespace

std::string ConfigPath(const std::map<std::string, std::string>& env) {
  std::string p = Get(env, "MARIPOSA_CONFIG");
  if (!p.empty()) return p;
  return absl::StrCat(Get(env, "HOME"), "/.config/mariposa/config.yaml");
}

absl::StatusOr<ConfigFile> LoadConfig(const std::string& path) {
  ConfigFile cfg;
  std::ifstream in(path);
  if (!in) return cfg;
  try {
    YAML::Node root = YAML::Load(in);
    if (!root || root.IsNull()) return cfg;
    if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": the config file must be a map"));
    for (const auto& kv : root) {
      std::string k = kv.first.as<std::string>();
      if (k == "current-context") {
        cfg.current = kv.second.as<std::string>();
      } else if (k == "contexts") {
        if (!kv.second.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": contexts must be a map"));
        for (const auto& c : kv.second) {
          Settings s;
          if (!c.second.IsMap()) {
            return absl::InvalidArgumentError(
                absl::StrCat(path, ": context ", c.first.as<std::string>(), " must be a map"));
          }
          for (const auto& f : c.second) {
            std::string fk = f.first.as<std::string>();
            std::string* field = Field(s, fk);
            if (field == nullptr) {
              return absl::InvalidArgumentError(absl::StrCat(
                  path, ": context ", c.first.as<std::string>(), ": unknown key \"", fk,
                  "\" (addr, project, ca, cert, key, token, token-file, triton-profile)"));
            }
            *field = f.second.as<std::string>();
          }
          cfg.contexts[c.first.as<std::string>()] = s;
        }
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": unknown key \"", k, "\" (current-context, contexts)"));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  return cfg;
}

absl::Status SaveConfig(const std::string& path, const ConfigFile& cfg) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (!cfg.current.empty()) out << YAML::Key << "current-context" << YAML::Value << cfg.current;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, s] : cfg.contexts) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    Settings copy = s;
    for (const char* k : kKeys) {
      const std::string* v = Field(copy, k);
      if (!v->empty()) out << YAML::Key << k << YAML::Value << *v;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    // ~/.config/mariposa and its parents, private.
    std::string dir = path.substr(0, slash);
    for (size_t i = 1; i <= dir.size(); ++i) {
      if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0700);
    }
  }
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  std::string text = absl::StrCat(out.c_str(), "\n");
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Settings> Resolve(const Settings& flags, const std::string& context,
                                 const std::map<std::string, std::string>& env, const ConfigFile& cfg) {
  std::string name = !context.empty() ? context : !Get(env, "MARIPOSA_CONTEXT").empty() ? Get(env, "MARIPOSA_CONTEXT")
                                                                                         : cfg.current;
  Settings ctx;
  if (!name.empty()) {
    auto it = cfg.contexts.find(name);
    if (it == cfg.contexts.end()) {
      return absl::NotFoundError(absl::StrCat("no context \"", name, "\" in ", ConfigPath(env),
                                              "; `mariposa config get-contexts` lists them"));
    }
    ctx = it->second;
  }
  Settings out;
  auto pick = [&](const std::string& flag, const char* var, const std::string& from_ctx, const std::string& def) {
    if (!flag.empty()) return flag;
    if (!Get(env, var).empty()) return Get(env, var);
    if (!from_ctx.empty()) return from_ctx;
    return def;
  };
  out.addr = pick(flags.addr, "MARIPOSA_ADDR", ctx.addr, "127.0.0.1:7740");
  out.project = pick(flags.project, "MARIPOSA_PROJECT", ctx.project, "");
  out.ca = Expand(pick(flags.ca, "MARIPOSA_CA", ctx.ca, ""), env);
  out.cert = Expand(pick(flags.cert, "MARIPOSA_CERT", ctx.cert, ""), env);
  out.key = Expand(pick(flags.key, "MARIPOSA_KEY", ctx.key, ""), env);
  // A token given at a higher level hides a token file below it, and back.
  if (!flags.token_file.empty() || !flags.token.empty()) {
    out.token_file = Expand(flags.token_file, env);
    out.token = flags.token;
  } else if (!Get(env, "MARIPOSA_TOKEN").empty() || !Get(env, "MARIPOSA_TOKEN_FILE").empty()) {
    out.token = Get(env, "MARIPOSA_TOKEN");
    out.token_file = Expand(Get(env, "MARIPOSA_TOKEN_FILE"), env);
  } else {
    out.token = ctx.token;
    out.token_file = Expand(ctx.token_file, env);
  }
  // Signing as a Triton user (docs/security.md), when no token is given:
  // the profile named, else the triton CLI's own variables say who the user
  // is ($TRITON_PROFILE, or an account and key id); "none" turns it off.
  out.triton_profile = pick(flags.triton_profile, "MARIPOSA_TRITON_PROFILE", ctx.triton_profile, "");
  if (out.triton_profile.empty() && out.token.empty() && out.token_file.empty()) {
    auto any = [&](const char* a, const char* b) { return !Get(env, a).empty() || !Get(env, b).empty(); };
    if (!Get(env, "TRITON_PROFILE").empty()) out.triton_profile = "current";
    else if (any("TRITON_ACCOUNT", "SDC_ACCOUNT") && any("TRITON_KEY_ID", "SDC_KEY_ID")) out.triton_profile = "env";
  }
  if (out.triton_profile == "none") out.triton_profile.clear();
  return out;
}

}  // namespace mariposa::cli
