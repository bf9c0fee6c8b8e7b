// CLI contexts, like kubeconfig: named sets of connection settings in a
// config file ($MARIPOSA_CONFIG, default ~/.config/mariposa/config.yaml):
//
//   current-context: prod
//   contexts:
//     prod:
//       addr: mariposa.example.com:7740
//       ca: /etc/mariposa/ca.pem          # TLS: the server's CA
//       cert: ~/.mariposa/me.pem          # client certificate (with key)
//       key: ~/.mariposa/me-key.pem
//       token-file: ~/.mariposa/prod.token  # or token: mpt_…
//       triton-profile: us-east-1         # or sign as this `triton` profile's user
//       project: jupiter
//
// Every setting is resolved flag > environment > context > default.
#ifndef MARIPOSA_CLI_CONFIG_H_
#define MARIPOSA_CLI_CONFIG_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace mariposa::cli {

struct Settings {
  std::string addr;
  std::string project;
  std::string ca;
  std::string cert;
  std::string key;
  std::string token;
  std::string token_file;
  // Sign each call as this `triton` CLI profile's user ("current", "env" or
  // a name; auth/ssh_signer.h) when no token is given.
  std::string triton_profile;
};

struct ConfigFile {
  std::string current;
  std::map<std::string, Settings> contexts;
};

// The config file's path: $MARIPOSA_CONFIG, else $HOME/.config/mariposa/config.yaml.
std::string ConfigPath(const std::map<std::string, std::string>& env);
// A missing file is an empty config; a malformed one is INVALID_ARGUMENT
// naming the file and what is wrong.
absl::StatusOr<ConfigFile> LoadConfig(const std::string& path);
// Written 0600 (it may hold a token), atomically.
absl::Status SaveConfig(const std::string& path, const ConfigFile& cfg);

// `context` ("" = the file's current one, or none). NOT_FOUND for a context
// the file does not have. Environment: MARIPOSA_ADDR, MARIPOSA_PROJECT,
// MARIPOSA_CA, MARIPOSA_CERT, MARIPOSA_KEY, MARIPOSA_TOKEN,
// MARIPOSA_TOKEN_FILE, MARIPOSA_TRITON_PROFILE, MARIPOSA_CONTEXT. The default address is
// 127.0.0.1:7740.
absl::StatusOr<Settings> Resolve(const Settings& flags, const std::string& context,
                                 const std::map<std::string, std::string>& env, const ConfigFile& cfg);

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_CONFIG_H_
