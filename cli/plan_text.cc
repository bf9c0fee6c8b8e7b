#include "cli/plan_text.h"

#include <algorithm>

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convergence/decide/images.h"

namespace mariposa::cli {

std::string Plural(int64_t n, const std::string& what) {
  return absl::StrCat(n, " ", what, n == 1 ? "" : "s");
}

std::string ImageRef(const std::string& uuid, const std::string& label) {
  if (uuid.empty()) return label;
  return absl::StrCat(uuid.substr(0, 8), label.empty() ? "" : absl::StrCat(" (", label, ")"));
}

std::string HumanBytes(int64_t bytes) { return convergence::HumanBytes(bytes); }


std::string ImagePlanText(const v1::ServiceChange& c) {
  if (!c.has_image_plan()) return "";
  const v1::ImagePlan& p = c.image_plan();
  const std::string target = ImageRef(p.image_uuid(), p.label());
  std::string out;
  if (!c.runs().empty() && c.action() != v1::ServiceChange::DELETE) {
    // Nothing is created now: each run makes its instances, then removes them.
    return absl::StrCat(c.action() == v1::ServiceChange::CREATE ? "create" : "update", " \"", c.service(), "\" ",
                        c.runs(), " service of image ", target, ": ", Plural(c.to_count(), "instance"),
                        " per run, ", c.runs() == "event" ? "on `mariposa run`" : "at each scheduled time",
                        "; none now\n");
  }
  if (c.action() == v1::ServiceChange::CREATE) {
    absl::StrAppend(&out, "create \"", c.service(), "\" service (",
                    p.agent() ? Plural(p.instances(), "instance") : Plural(c.to_count(), "instance"), ") of image ",
                    target, ":\n");
    // Instances that exist before the service does (core zones, adopted)
    // are listed like an update's; the rest are created.
    if (!p.agent() && c.to_count() > p.instances()) {
      absl::StrAppend(&out, "    ", Plural(c.to_count() - p.instances(), "instance"), " will be created\n");
    }
    if (!p.agent() && p.instances() == 0) return out;
  } else {
    absl::StrAppend(&out, "update \"", c.service(), "\" service (", Plural(p.instances(), "instance"),
                    ") to image ", target, ":\n");
  }
  for (const v1::ImagePlanStep& st : p.from()) {
    std::string from = ImageRef(st.image_uuid(), st.label());
    if (st.label() == "not installed" && st.image_uuid().empty()) {
      absl::StrAppend(&out, "    ", Plural(st.count(), "instance"), " will be installed (none there now)\n");
    } else if (st.downgrade() && p.forced()) {
      absl::StrAppend(&out, "    ", Plural(st.count(), "instance"), " forced downgrade from image ", from, "\n");
    } else if (st.downgrade()) {
      absl::StrAppend(&out, "    ", Plural(st.count(), "instance"), " would be downgraded from image ", from,
                      ": refused without --force\n");
    } else {
      absl::StrAppend(&out, "    ", Plural(st.count(), "instance"), " will be updated from image ", from, "\n");
    }
  }
  if (p.already() > 0) {
    absl::StrAppend(&out, "    ", Plural(p.already(), "instance"), " already at image ",
                    p.image_uuid().substr(0, 8), "\n");
  }
  if (p.instances() == 0 && c.action() != v1::ServiceChange::CREATE) {
    absl::StrAppend(&out, "    no instances now\n");
  }
  return out;
}

std::string DownloadsText(const v1::Diff& d) {
  std::map<std::string, const v1::ImagePlan*> images;  // by uuid: each once
  for (const v1::ServiceChange& c : d.services()) {
    if (c.has_image_plan() && c.image_plan().download_bytes() > 0) images[c.image_plan().image_uuid()] = &c.image_plan();
  }
  if (images.empty()) return "";
  int64_t total = 0;
  for (const auto& kv : images) total += kv.second->download_bytes();
  std::string out = absl::StrCat("download ", Plural(static_cast<int64_t>(images.size()), "image"), " (",
                                 HumanBytes(total), "):\n");
  for (const auto& kv : images) {
    absl::StrAppend(&out, "    image ", ImageRef(kv.first, kv.second->label()), " (",
                    HumanBytes(kv.second->download_bytes()), ") from ", kv.second->source(), "\n");
  }
  return out;
}

std::string PlanHeader(const std::string& project, const std::string& daemon) {
  return absl::StrCat("plan for project \"", project, "\" on mariposad ", daemon, ":\n");
}

namespace {

// "N to create, N to replace, N to delete[, …]" of one data center's services.
std::string Counts(const google::protobuf::RepeatedPtrField<v1::ServiceChange>& services) {
  int64_t create = 0, replace = 0, in_place = 0, remove = 0, agent_servers = 0;
  for (const auto& c : services) {
    if (c.has_image_plan() && c.image_plan().agent()) {
      // Agents are installed per server (their rollout), not created.
      agent_servers += std::max<int64_t>(0, c.image_plan().instances() - c.image_plan().already());
      continue;
    }
    if (!c.runs().empty() && c.action() != v1::ServiceChange::DELETE) continue;  // its runs make instances
    switch (c.action()) {
      case v1::ServiceChange::CREATE:
        create += c.to_count();
        break;
      case v1::ServiceChange::DELETE:
        remove += c.from_count();
        break;
      case v1::ServiceChange::UPDATE:
        if (c.to_count() > c.from_count()) create += c.to_count() - c.from_count();
        else remove += c.from_count() - c.to_count();
        if (c.spec_changed()) (c.in_place() ? in_place : replace) += c.instances_replaced();
        break;
      default:
        break;
    }
  }
  std::string out = absl::StrCat(create, " to create, ", replace, " to replace, ", remove, " to delete");
  if (in_place > 0) absl::StrAppend(&out, ", ", in_place, " to reprovision in place");
  if (agent_servers > 0) absl::StrAppend(&out, ", agents to install on ", agent_servers, agent_servers == 1 ? " server" : " servers");
  return out;
}

// One line per service a data center's plan changes.
std::string DataCenterServices(const v1::DataCenterPlan& dc) {
  std::string out;
  for (const auto& c : dc.services()) {
    const char* verb = c.action() == v1::ServiceChange::CREATE   ? "create"
                       : c.action() == v1::ServiceChange::DELETE ? "delete"
                       : c.action() == v1::ServiceChange::UPDATE ? "update"
                                                                 : nullptr;
    if (verb == nullptr) continue;
    absl::StrAppend(&out, "      ", verb, " ", c.service());
    if (c.action() == v1::ServiceChange::CREATE) absl::StrAppend(&out, " (", Plural(c.to_count(), "instance"), ")");
    if (c.action() == v1::ServiceChange::DELETE) absl::StrAppend(&out, " (", Plural(c.from_count(), "instance"), ")");
    std::vector<std::string> fields;
    for (const auto& f : c.fields()) {
      fields.push_back(f.from().size() + f.to().size() <= 60
                           ? absl::StrCat(f.path(), " ", f.from().empty() ? "(none)" : f.from(), " → ",
                                          f.to().empty() ? "(none)" : f.to())
                           : f.path());
    }
    if (!fields.empty()) absl::StrAppend(&out, ": ", absl::StrJoin(fields, ", "));
    out += "\n";
  }
  return out;
}

}  // namespace

std::string PlanSummary(const v1::Diff& d) {
  std::string out = Counts(d.services()) + "\n";
  if (d.datacenters().empty()) return out;
  absl::StrAppend(&out, "by data center, in rollout order:\n");
  for (const v1::DataCenterPlan& dc : d.datacenters()) {
    std::vector<std::string> notes;
    if (dc.canary()) notes.push_back("canary: first");
    if (dc.local()) notes.push_back("this data center");
    if (dc.checked()) notes.push_back("planned and checked there");
    if (!dc.listed_before() && dc.listed_after()) notes.push_back("new to the project");
    if (dc.listed_before() && !dc.listed_after()) notes.push_back("no longer listed: its instances are removed");
    absl::StrAppend(&out, "  ", dc.name(), notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(notes, "; "), ")"),
                    ": ", Counts(dc.services()), "\n", DataCenterServices(dc));
  }
  return out;
}

}  // namespace mariposa::cli
