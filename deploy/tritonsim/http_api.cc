#include "deploy/tritonsim/http_api.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "absl/strings/ascii.h"
#include "deploy/tritonsim/changefeed.h"
#include "deploy/tritonsim/fwapi.h"
#include "deploy/tritonsim/mahi.h"

namespace tritonsim {
namespace {

using Handler = std::function<Reply(const httplib::Request&, const Params&, const json&)>;

void Send(const Reply& r, httplib::Response* res) {
  res->status = r.status;
  for (const auto& h : r.headers) res->set_header(h.first, h.second);
  if (!r.raw_body.empty()) res->set_content(r.raw_body, "application/json");
  else if (!r.body.is_null()) res->set_content(r.body.dump(), "application/json");
}

// Wraps a handler: API latency, fault injection for `op`, JSON body parsing.
httplib::Server::Handler Wrap(const std::string& op, DataCenter* dc, std::atomic<int>* latency, Handler h) {
  return [op, dc, latency, h](const httplib::Request& req, httplib::Response& res) {
    int delay = latency->load();
    if (delay > 0) dc->clock()->SleepFor(absl::Milliseconds(delay));
    Reply injected;
    int hang_ms = 0;
    if (dc->TakeFailure(op, &injected, &hang_ms)) {
      if (hang_ms > 0) {
        // A slow call: wait, then answer normally.
        dc->clock()->SleepFor(absl::Milliseconds(hang_ms));
      } else {
        Send(injected, &res);
        return;
      }
    }
    // Parameters come from the query string only; the body is always JSON
    // (httplib would merge a form-encoded body into req.params).
    Params q;
    size_t qm = req.target.find('?');
    if (qm != std::string::npos) httplib::detail::parse_query_text(req.target.substr(qm + 1), q);
    json body;
    if (!req.body.empty()) {
      body = json::parse(req.body, nullptr, false);
      if (body.is_discarded()) {
        Send(DataCenter::Error(400, "InvalidContent", "Invalid JSON in request body"), &res);
        return;
      }
    }
    Reply reply = h(req, q, body);
    // ?sync=true: answer only when the job the call started has ended.
    auto sync = q.find("sync");
    if (sync != q.end() && sync->second == "true" && reply.body.is_object() && reply.body.contains("job_uuid")) {
      dc->WaitJob(reply.body["job_uuid"].get<std::string>(), Params{});
    }
    Send(reply, &res);
  };
}

const std::string kId = "([0-9a-zA-Z-]+)";

void InstallVmapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/vms", W("ListVms", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->ListVms(q, r.method == "HEAD");
  }));
  s->Post("/vms", W("CreateVm", [dc](const httplib::Request&, const Params& q, const json& b) { return dc->CreateVm(b, q); }));
  s->Get("/vms/" + kId, W("GetVm", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->GetVm(r.matches[1], q);
  }));
  s->Post("/vms/" + kId, W("VmAction", [dc](const httplib::Request& r, const Params& q, const json& b) {
    return dc->VmAction(r.matches[1], q, b);
  }));
  s->Delete("/vms/" + kId, W("DeleteVm", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->DeleteVm(r.matches[1], q);
  }));
  for (const std::string& path : {"/vms/" + kId + "/tags", "/vms/" + kId + "/tags/([^/]+)"}) {
    auto tags = W("VmTags", [dc](const httplib::Request& r, const Params& q, const json& b) {
      return dc->VmTags(r.method, r.matches[1], r.matches.size() > 2 ? std::string(r.matches[2]) : "", q, b);
    });
    s->Get(path, tags);
    s->Post(path, tags);
    s->Put(path, tags);
    s->Delete(path, tags);
  }
  ChangeFeed* feed = dc->change_feed();
  if (feed == nullptr) return;
  // The change feed (changefeed.h): the resources, the listeners, and the
  // websocket a listener asks for with Upgrade.
  s->Get("/changefeeds", W("ChangeFeeds", [feed](const httplib::Request& r, const Params&, const json&) {
    if (!feed->enabled()) return DataCenter::Error(404, "ResourceNotFound", "/changefeeds does not exist");
    Reply out;
    if (absl::AsciiStrToLower(r.get_header_value("Upgrade")) != "websocket") {
      out.raw_body = feed->ResourcesJson();
      return out;
    }
    std::string key = r.get_header_value("Sec-WebSocket-Key");
    int fd = FindConnectionFd(r.local_addr, r.local_port, r.remote_addr, r.remote_port);
    if (key.empty() || fd < 0) {
      return DataCenter::Error(400, "BadRequest", key.empty() ? "Sec-WebSocket-Key is missing" : "connection not found");
    }
    feed->Serve(fd, key, r.get_header_value("Accept-Version"));
    shutdown(fd, SHUT_RDWR);  // httplib's own answer goes nowhere; it closes the socket
    return out;
  }));
  s->Get("/changefeeds/stats", W("ChangeFeedsStats", [feed](const httplib::Request&, const Params&, const json&) {
    if (!feed->enabled()) return DataCenter::Error(404, "ResourceNotFound", "/changefeeds/stats does not exist");
    Reply out;
    out.raw_body = feed->StatsJson();
    return out;
  }));
}

// Workflow jobs: VMAPI answers for its own, and the workflow API (where
// IMGAPI's are followed) for all.
void InstallJobs(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/jobs", W("ListJobs", [dc](const httplib::Request&, const Params& q, const json&) { return dc->ListJobs(q); }));
  s->Get("/jobs/" + kId, W("GetJob", [dc](const httplib::Request& r, const Params&, const json&) { return dc->GetJob(r.matches[1]); }));
  s->Get("/jobs/" + kId + "/wait", W("WaitJob", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->WaitJob(r.matches[1], q);
  }));
}

void InstallCnapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/servers", W("ListServers", [dc](const httplib::Request&, const Params& q, const json&) { return dc->ListServers(q); }));
  s->Get("/servers/" + kId, W("GetServer", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->GetServer(r.matches[1], q);
  }));
  s->Post("/servers/" + kId, W("ServerUpdate", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->UpdateServer(r.matches[1], b);
  }));
  s->Post("/servers/" + kId + "/install-agent", W("InstallAgent", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->InstallAgent(r.matches[1], b);
  }));
  s->Post("/servers/" + kId + "/uninstall-agents", W("UninstallAgents", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->UninstallAgents(r.matches[1], b);
  }));
  s->Get("/tasks/" + kId, W("GetTask", [dc](const httplib::Request& r, const Params&, const json&) { return dc->GetTask(r.matches[1]); }));
  s->Get("/tasks/" + kId + "/wait", W("WaitTask", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->WaitTask(r.matches[1], q);
  }));
}

void InstallImgapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/images", W("ListImages", [dc](const httplib::Request&, const Params& q, const json&) { return dc->ListImages(q); }));
  s->Post("/images", W("CreateImage", [dc](const httplib::Request&, const Params& q, const json& b) {
    auto action = q.find("action");
    if (action == q.end() || action->second != "create-from-vm") {
      return DataCenter::Error(422, "InvalidParameter", "only action=create-from-vm is supported on POST /images");
    }
    return dc->CreateImageFromVm(q, b);
  }));
  s->Get("/images/" + kId, W("GetImage", [dc](const httplib::Request& r, const Params&, const json&) { return dc->GetImage(r.matches[1]); }));
  // The "updates" source (an IMGAPI of its own, like updates.tritondatacenter.com):
  // what import-remote fetches, with channels and change logs.
  s->Get("/updates/images", W("SourceListImages", [dc](const httplib::Request&, const Params& q, const json&) {
    return dc->ListImages(q, true);
  }));
  s->Get("/updates/images/" + kId, W("SourceGetImage", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->GetImage(r.matches[1], true);
  }));
  s->Get("/updates/channels", W("SourceListChannels", [dc](const httplib::Request&, const Params&, const json&) {
    return dc->ListChannels();
  }));
  s->Post("/images/" + kId, W("ImageAction", [dc](const httplib::Request& r, const Params& q, const json& b) {
    return dc->ImageAction(r.matches[1], q, b);
  }));

}

void InstallPapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/packages", W("ListPackages", [dc](const httplib::Request&, const Params& q, const json&) { return dc->ListPackages(q); }));
  s->Get("/packages/" + kId, W("GetPackage", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->GetPackage(r.matches[1]);
  }));
}

void InstallNapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/networks", W("ListNetworks", [dc](const httplib::Request&, const Params& q, const json&) { return dc->ListNetworks(q); }));
  s->Get("/networks/" + kId, W("GetNetwork", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->GetNetwork(r.matches[1]);
  }));
  s->Get("/network_pools", W("ListNetworkPools", [dc](const httplib::Request&, const Params& q, const json&) {
    return dc->ListNetworkPools(q);
  }));
  s->Put("/networks/" + kId, W("UpdateNetwork", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->UpdateNetwork(r.matches[1], b);
  }));
  // Fabrics: /fabrics/:owner_uuid/vlans[/:vlan_id[/networks[/:network_uuid]]].
  const std::string vlans = "/fabrics/" + kId + "/vlans";
  s->Get(vlans, W("ListFabricVLANs", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->ListFabricVlans(r.matches[1]);
  }));
  s->Post(vlans, W("CreateFabricVLAN", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->CreateFabricVlan(r.matches[1], b);
  }));
  s->Get(vlans + "/([0-9]+)", W("GetFabricVLAN", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->GetFabricVlan(r.matches[1], r.matches[2]);
  }));
  s->Put(vlans + "/([0-9]+)", W("UpdateFabricVLAN", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->UpdateFabricVlan(r.matches[1], r.matches[2], b);
  }));
  s->Delete(vlans + "/([0-9]+)", W("DeleteFabricVLAN", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->DeleteFabricVlan(r.matches[1], r.matches[2]);
  }));
  s->Get(vlans + "/([0-9]+)/networks", W("ListFabricNetworks", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->ListFabricNetworks(r.matches[1], r.matches[2]);
  }));
  s->Post(vlans + "/([0-9]+)/networks", W("CreateFabricNetwork", [dc](const httplib::Request& r, const Params&, const json& b) {
    return dc->CreateFabricNetwork(r.matches[1], r.matches[2], b);
  }));
  s->Get(vlans + "/([0-9]+)/networks/" + kId, W("GetFabricNetwork", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->GetFabricNetwork(r.matches[1], r.matches[2], r.matches[3]);
  }));
  s->Delete(vlans + "/([0-9]+)/networks/" + kId, W("DeleteFabricNetwork", [dc](const httplib::Request& r, const Params&, const json&) {
    return dc->DeleteFabricNetwork(r.matches[1], r.matches[2], r.matches[3]);
  }));
}

// VOLAPI: /volumes, /volumesizes (volumes.cc).
void InstallVolapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  s->Get("/volumes", W("ListVolumes", [dc](const httplib::Request&, const Params& q, const json&) {
    return dc->ListVolumes(q);
  }));
  s->Post("/volumes", W("CreateVolume", [dc](const httplib::Request&, const Params&, const json& b) {
    return dc->CreateVolume(b);
  }));
  s->Get("/volumes/" + kId, W("GetVolume", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->GetVolume(r.matches[1], q);
  }));
  s->Delete("/volumes/" + kId, W("DeleteVolume", [dc](const httplib::Request& r, const Params& q, const json&) {
    return dc->DeleteVolume(r.matches[1], q);
  }));
  s->Get("/volumes/" + kId + "/references", W("GetVolumeReferences", [dc](const httplib::Request& r, const Params&,
                                                                           const json&) {
    return dc->VolumeReferences(r.matches[1]);
  }));
  s->Get("/volumesizes", W("ListVolumeSizes", [](const httplib::Request&, const Params& q, const json&) {
    return DataCenter::VolumeSizes(q);
  }));
}

// FWAPI: /rules (fwapi.h).
void InstallFwapi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  Firewall* fw = dc->firewall();
  s->Get("/rules", W("ListRules", [fw](const httplib::Request&, const Params& q, const json&) { return fw->List(q); }));
  s->Post("/rules", W("CreateRule", [fw](const httplib::Request&, const Params&, const json& b) { return fw->Create(b); }));
  s->Get("/rules/" + kId, W("GetRule", [fw](const httplib::Request& r, const Params& q, const json&) {
    return fw->Get(r.matches[1], q);
  }));
  s->Put("/rules/" + kId, W("UpdateRule", [fw](const httplib::Request& r, const Params&, const json& b) {
    return fw->Update(r.matches[1], b);
  }));
  s->Delete("/rules/" + kId, W("DeleteRule", [fw](const httplib::Request& r, const Params& q, const json&) {
    return fw->Delete(r.matches[1], q);
  }));
}

// mahi, Triton's auth cache (mahi.h).
void InstallMahi(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  auto W = [&](const std::string& op, Handler h) { return Wrap(op, dc, lat, std::move(h)); };
  Mahi* m = dc->mahi();
  s->Get("/accounts", W("GetAccount", [m](const httplib::Request&, const Params& q, const json&) { return m->GetAccount(q); }));
  s->Get("/accounts/" + kId, W("GetAccountByUuid", [m](const httplib::Request& r, const Params&, const json&) {
    return m->GetAccountByUuid(r.matches[1]);
  }));
  s->Get("/users", W("GetUser", [m](const httplib::Request&, const Params& q, const json&) { return m->GetUser(q); }));
  s->Get("/users/" + kId, W("GetUserByUuid", [m](const httplib::Request& r, const Params&, const json&) {
    return m->GetUserByUuid(r.matches[1]);
  }));
}

// Control API (tritonsim ctl) and the simulator's own /metrics.
void InstallControl(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat) {
  s->Post("/_sim/servers/([^/]+)/(down|up)", [dc](const httplib::Request& r, httplib::Response& res) {
    Send(dc->SetServerStatus(r.matches[1], r.matches[2] == "up" ? "running" : "unknown"), &res);
  });
  s->Post("/_sim/servers/([^/]+)/delete", [dc](const httplib::Request& r, httplib::Response& res) {
    Send(dc->DeleteServer(r.matches[1]), &res);
  });
  s->Post("/_sim/vms/" + kId + "/exit/(\\d+)", [dc](const httplib::Request& r, httplib::Response& res) {
    Send(dc->ExitVm(r.matches[1], std::stoi(r.matches[2])), &res);
  });
  s->Post("/_sim/vms/" + kId + "/(kill|destroy)", [dc](const httplib::Request& r, httplib::Response& res) {
    Send(dc->KillVm(r.matches[1], r.matches[2] == "kill" ? "stopped" : "destroyed"), &res);
  });
  s->Post("/_sim/vms/" + kId + "/health/(healthy|unhealthy|refuse|hang)",
          [dc](const httplib::Request& r, httplib::Response& res) {
            std::string h = r.matches[2];
            VmHealth v = h == "healthy" ? VmHealth::kHealthy
                         : h == "unhealthy" ? VmHealth::kUnhealthy
                         : h == "refuse" ? VmHealth::kRefuse
                                         : VmHealth::kHang;
            Send(dc->SetVmHealth(r.matches[1], v), &res);
          });
  s->Post("/_sim/vms/" + kId + "/files", [dc](const httplib::Request& r, httplib::Response& res) {
    json b = json::parse(r.body, nullptr, false);
    if (!b.is_object() || !b.contains("path") || !b["path"].is_string() || !b.contains("content") ||
        !b["content"].is_string()) {
      Send(DataCenter::Error(400, "InvalidContent", "body: {\"path\": PATH, \"content\": TEXT}"), &res);
      return;
    }
    Send(dc->WriteFile(r.matches[1], b["path"], b["content"]), &res);
  });
  s->Get("/_sim/vms/" + kId + "/files", [dc](const httplib::Request& r, httplib::Response& res) {
    Send(dc->Files(r.matches[1]), &res);
  });
  s->Post("/_sim/fail", [dc](const httplib::Request& r, httplib::Response& res) {
    json b = json::parse(r.body, nullptr, false);
    if (!b.is_object() || !b.contains("op") || !b["op"].is_string()) {
      Send(DataCenter::Error(400, "InvalidContent", "body: {\"op\": NAME, \"count\": N, \"status\": 503, \"hang_ms\": 0}"), &res);
      return;
    }
    dc->FailNext(b["op"], b.value("count", 1), b.value("status", 503), b.value("hang_ms", 0));
    Reply ok;
    ok.body = {{"op", b["op"]}, {"count", b.value("count", 1)}};
    Send(ok, &res);
  });
  s->Post("/_sim/knobs", [dc, lat](const httplib::Request& r, httplib::Response& res) {
    json b = json::parse(r.body, nullptr, false);
    if (!b.is_object()) {
      Send(DataCenter::Error(400, "InvalidContent", "body must be a JSON object"), &res);
      return;
    }
    if (b.contains("api_latency_ms")) lat->store(b["api_latency_ms"].get<int>());
    Reply out = dc->SetJobKnobs(b);
    out.body["api_latency_ms"] = lat->load();
    Send(out, &res);
  });
  s->Post("/_sim/changefeed/(on|off|drop|skip)", [dc](const httplib::Request& r, httplib::Response& res) {
    ChangeFeed* feed = dc->change_feed();
    if (feed == nullptr) {
      Send(DataCenter::Error(409, "NoChangeFeed", "tritonsim runs without a change feed (--no-changefeed)"), &res);
      return;
    }
    if (r.matches[1] == "drop") feed->DropAll();
    else if (r.matches[1] == "skip") feed->SkipNext(std::atoi(r.get_param_value("n").c_str()));
    else feed->SetEnabled(r.matches[1] == "on");
    Reply ok;
    ok.body = {{"changefeed", feed->enabled() ? "on" : "off"}, {"published", feed->published()}};
    Send(ok, &res);
  });
  s->Get("/_sim/stats", [dc](const httplib::Request&, httplib::Response& res) { Send(dc->Stats(), &res); });
  s->Get("/_sim/mahi/accounts", [dc](const httplib::Request&, httplib::Response& res) { Send(dc->mahi()->List(), &res); });
  s->Post("/_sim/mahi/(accounts|users|keys/delete)", [dc](const httplib::Request& r, httplib::Response& res) {
    json b = json::parse(r.body, nullptr, false);
    std::string what = r.matches[1];
    Send(what == "accounts" ? dc->mahi()->AddAccount(b) : what == "users" ? dc->mahi()->AddUser(b) : dc->mahi()->DeleteKey(b),
         &res);
  });
  // The same counts for Prometheus (a scrape target in tests and demos).
  s->Get("/metrics", [dc](const httplib::Request&, httplib::Response& res) {
    json st = dc->Stats().body;
    std::string out =
        "# HELP tritonsim_vms VMs by state.\n# TYPE tritonsim_vms gauge\n";
    for (const auto& [state, n] : st["vm_states"].items()) {
      out += "tritonsim_vms{state=\"" + state + "\"} " + std::to_string(n.get<int64_t>()) + "\n";
    }
    out += "# HELP tritonsim_servers Compute nodes.\n# TYPE tritonsim_servers gauge\ntritonsim_servers " +
           std::to_string(st["servers"].get<int64_t>()) + "\n";
    out += "# HELP tritonsim_requests_total API requests by operation.\n# TYPE tritonsim_requests_total counter\n";
    for (const auto& [op, n] : st["calls"].items()) {
      out += "tritonsim_requests_total{op=\"" + op + "\"} " + std::to_string(n.get<int64_t>()) + "\n";
    }
    res.set_content(out, "text/plain; version=0.0.4");
  });
}

}  // namespace

void InstallRoutes(httplib::Server* s, DataCenter* dc, std::atomic<int>* lat, const std::string& api) {
  // Every service answers /ping.
  s->Get("/ping", Wrap("Ping", dc, lat, [dc](const httplib::Request&, const Params&, const json&) { return dc->Ping(); }));
  const bool all = api.empty();
  if (all || api == "vmapi") InstallVmapi(s, dc, lat);
  if (all || api == "vmapi" || api == "wfapi") InstallJobs(s, dc, lat);
  if (all || api == "cnapi") InstallCnapi(s, dc, lat);
  if (all || api == "imgapi") InstallImgapi(s, dc, lat);
  if (all || api == "papi") InstallPapi(s, dc, lat);
  if (all || api == "napi") InstallNapi(s, dc, lat);
  if (all || api == "fwapi") InstallFwapi(s, dc, lat);
  if (all || api == "volapi") InstallVolapi(s, dc, lat);
  if (all || api == "mahi") InstallMahi(s, dc, lat);
  if (all) InstallControl(s, dc, lat);
}

}  // namespace tritonsim
