#include "convergence/triton/endpoints.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace mariposa::triton {
namespace {

// "http://host[:port]" without a path (a trailing slash is dropped).
absl::StatusOr<std::string> CheckUrl(std::string url, const std::string& where) {
  while (absl::EndsWith(url, "/")) url.pop_back();
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " \"", url, "\" is not an http:// or https:// URL (e.g. http://vmapi.dc.example.com)"));
  }
  if (rest.empty() || absl::StrContains(rest, "/") || absl::StrContains(rest, " ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " \"", url, "\" must name a host (and port) only, without a path: the API's routes follow it"));
  }
  return url;
}

std::string SapiKey(const std::string& api) {
  return api == "wfapi" ? "WORKFLOW_SERVICE" : absl::StrCat(absl::AsciiStrToUpper(api), "_SERVICE");
}

std::vector<std::string> AllApis() {
  std::vector<std::string> all = ApiNames();
  all.insert(all.end(), OptionalApiNames().begin(), OptionalApiNames().end());
  return all;
}

}  // namespace

absl::StatusOr<std::map<std::string, ApiEndpoint>> ResolveEndpoints(const EndpointFlags& flags,
                                                                    const std::map<std::string, std::string>& sapi) {
  std::map<std::string, ApiEndpoint> out;
  for (const auto& [api, given] : flags.url) {
    if (!absl::c_linear_search(AllApis(), api)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown Triton API \"", api, "\"; the APIs are ",
                                                     absl::StrJoin(AllApis(), ", ")));
    }
  }
  std::string triton;
  if (!flags.triton.empty()) {
    auto t = CheckUrl(flags.triton, "--triton");
    if (!t.ok()) return t.status();
    triton = *t;
  }
  std::vector<std::string> missing;
  for (const std::string& api : AllApis()) {
    ApiEndpoint e;
    auto flag = flags.url.find(api);
    auto meta = sapi.find(SapiKey(api));
    if (flag != flags.url.end() && !flag->second.empty()) {
      auto u = CheckUrl(flag->second, "--" + api);
      if (!u.ok()) return u.status();
      e.url = *u;
    } else if (meta != sapi.end() && !meta->second.empty()) {
      std::string host = meta->second;
      auto u = CheckUrl(absl::StartsWith(host, "http") ? host : "http://" + host,
                        absl::StrCat(SapiKey(api), " in ", flags.sapi_metadata_file));
      if (!u.ok()) return u.status();
      e.url = *u;
    } else {
      e.url = triton;
    }
    for (const auto& [text, name] : {std::pair{flags.timeout, std::string("--api-timeout")},
                                     std::pair{flags.api_timeout.count(api) ? flags.api_timeout.at(api) : "",
                                               "--" + api + "-timeout"}}) {
      if (text.empty()) continue;
      if (!absl::ParseDuration(text, &e.timeout) || e.timeout <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " \"", text, "\" is not a positive duration (e.g. 10s)"));
      }
    }
    for (const auto& [text, name] : {std::pair{flags.connections, std::string("--api-connections")},
                                     std::pair{flags.api_connections.count(api) ? flags.api_connections.at(api) : "",
                                               "--" + api + "-connections"}}) {
      if (text.empty()) continue;
      if (!absl::SimpleAtoi(text, &e.connections) || e.connections < 1 || e.connections > 4096) {
        return absl::InvalidArgumentError(absl::StrCat(name, " \"", text, "\" is not a number of connections in 1..4096"));
      }
    }
    out[api] = e;
  }
  // A simulator follows IMGAPI's jobs where it serves IMGAPI.
  if (out["wfapi"].url.empty()) out["wfapi"].url = out["imgapi"].url;
  bool any = false;
  for (const std::string& api : ApiNames()) {
    if (out[api].url.empty()) missing.push_back(api);
    else any = true;
  }
  std::sort(missing.begin(), missing.end());
  if (any && !missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no address for ", absl::StrJoin(missing, ", "), ": give --", missing.front(),
        " URL (and the others), their *_SERVICE keys in --sapi-metadata, or --triton URL for the ones a "
        "simulator serves together"));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseSapiMetadata(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a JSON object; give the SAPI metadata of a core zone ({\"VMAPI_SERVICE\": \"vmapi.dc.example.com\", …})"));
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    if (!absl::EndsWith(k, "_SERVICE")) continue;  // the rest of the metadata is not ours
    if (!v.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", k, " must be a string (a host name)"));
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace mariposa::triton
