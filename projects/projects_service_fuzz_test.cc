// Random Apply, Scale and Meta requests against the real Projects service on
// an in-memory store (10,000 cases by default; MARIPOSA_FUZZ_CASES=N for a
// longer run, see docs/development.md). Every request is answered with OK or
// a refusal that has a message and a code a user can act on — never INTERNAL
// or UNKNOWN — every reply is within the message limit and serializes, and
// the store still verifies at the end.
#include <cstdlib>
#include <random>

#include <grpcpp/server_context.h>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "projects/limits.h"
#include "projects/projects_service.h"
#include "projects/sql_store.h"
#include "tests/hostile_corpus.h"
#include "tests/process.h"

namespace mariposa {
namespace {

int Cases() {
  const char* env = std::getenv("MARIPOSA_FUZZ_CASES");
  return env != nullptr ? std::atoi(env) : 10000;
}

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {
    seeds_ = {testing::ReadFile("deploy/examples/jupiter.yaml"), testing::ReadFile("deploy/examples/core.yaml"),
              testing::ValidManifest("fuzz", 3), testing::ReadFile("deploy/examples/jupiter-datacenters.yaml")};
    for (auto& h : testing::HostileManifests(seed)) {
      if (h.text.size() < (64 << 10)) small_hostile_.push_back(h.text);  // the big ones run end to end
    }
  }

  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // Short random text: plain, UTF-8, control bytes, invalid UTF-8.
  std::string Text() {
    static const char* kPieces[] = {"web", "db", "a", "=", "+", "-", "1", "9223372036854775807", "-9223372036854775808",
                                    "99999999999999999999", " ", "{", "}", ".", "\t", "\n", "é", "✓", "\xff", "\xc0\xaf",
                                    "\x1b", "jupiter", "fuzz", "svc0", "wordpress"};
    std::string s;
    int n = static_cast<int>(Pick(5));
    for (int i = 0; i < n; ++i) {
      if (Pick(40) == 0) s.push_back('\0');
      else s += kPieces[Pick(std::size(kPieces))];
    }
    if (Pick(200) == 0) s += std::string(Pick(70000), 'x');
    return s;
  }

  std::string Project() {
    static const char* kNames[] = {"fuzz", "jupiter", "core", "", "nope", "Fuzz", "fuzz\xff"};
    return Pick(8) == 0 ? Text() : kNames[Pick(std::size(kNames))];
  }

  std::string Manifest() {
    switch (Pick(4)) {
      case 0: return small_hostile_[Pick(small_hostile_.size())];
      default: {
        std::string m = seeds_[Pick(seeds_.size())];
        int flips = static_cast<int>(Pick(4));
        for (int k = 0; k < flips && !m.empty(); ++k) {
          size_t at = Pick(m.size());
          switch (Pick(3)) {
            case 0: m[at] = static_cast<char>(rng_()); break;
            case 1: m.insert(at, Text()); break;
            default: m.erase(at, Pick(20)); break;
          }
        }
        return m;
      }
    }
  }

  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
  std::vector<std::string> seeds_;
  std::vector<std::string> small_hostile_;
};

bool Acceptable(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return true;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:  // compare-and-set lost
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return !s.error_message().empty() && s.error_message().size() <= 8192;
    default:
      return false;
  }
}

TEST(ProjectsServiceFuzzTest, RandomRequestsAreAnsweredOrRefusedCleanly) {
  SimulatedClock clock;
  auto store = SqlProjectStore::Open(":memory:", &clock);
  ASSERT_TRUE(store.ok());
  ProjectsService service(store->get(), &clock);
  // A data center with a peer that answers a rollout's checks now and then.
  service.set_datacenter("us-west-1");
  Fuzzer f(20261123);
  service.set_rollouts(
      [&f](const std::string& dc, const v1::ReceiveVersionRequest&) -> absl::StatusOr<v1::ApplyResponse> {
        if (f.Pick(2) == 0) return absl::UnavailableError(absl::StrCat("data center ", dc, ": connection refused"));
        return v1::ApplyResponse();
      },
      nullptr);
  int n = Cases();
  std::map<std::string, int> ok, refused;
  for (int i = 0; i < n; ++i) {
    grpc::ServerContext ctx;
    grpc::Status s;
    std::string what;
    size_t reply_bytes = 0;
    switch (f.Pick(13)) {
      case 0:
      case 1:
      case 2: {
        what = "Apply";
        v1::ApplyRequest req;
        req.set_manifest(f.Manifest());
        if (f.Pick(3) == 0) req.set_project(f.Project());
        req.set_force(f.Pick(2) == 0);
        req.set_dry_run(f.Pick(4) == 0);
        if (f.Pick(10) == 0) req.set_message(f.Text());
        if (f.Pick(10) == 0) req.set_previous_version(f.Text());
        v1::ApplyResponse resp;
        s = service.Apply(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
      case 3: {
        what = "Scale";
        v1::ScaleRequest req;
        req.set_project(f.Project());
        int changes = static_cast<int>(f.Pick(3));
        for (int k = 0; k < changes; ++k) req.add_changes(f.Text());
        req.set_dry_run(f.Pick(2) == 0);
        v1::ScaleResponse resp;
        s = service.Scale(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
      case 4: {
        what = "SetMeta";
        v1::SetMetaRequest req;
        req.set_project(f.Project());
        req.set_key(f.Pick(3) == 0 ? f.Text() : "k" + std::to_string(f.Pick(5)));
        req.set_value(f.Text());
        req.set_secret(f.Pick(5) == 0);
        if (f.Pick(4) == 0) req.set_cas_id(static_cast<int64_t>(f.rng()()));
        v1::SetMetaResponse resp;
        s = service.SetMeta(&ctx, &req, &resp);
        break;
      }
      case 5: {
        what = "IncrMeta";
        v1::IncrMetaRequest req;
        req.set_project(f.Project());
        req.set_key("k" + std::to_string(f.Pick(5)));
        static const int64_t kDeltas[] = {1, -1, INT64_MAX, INT64_MIN, 0, 1000};
        req.set_delta(kDeltas[f.Pick(std::size(kDeltas))]);
        v1::IncrMetaResponse resp;
        s = service.IncrMeta(&ctx, &req, &resp);
        break;
      }
      case 6: {
        what = "ImportMeta";
        v1::ImportMetaRequest req;
        req.set_project(f.Project());
        int entries = static_cast<int>(f.Pick(4));
        for (int k = 0; k < entries; ++k) (*req.mutable_entries())[f.Pick(2) ? f.Text() : "i" + std::to_string(k)] = f.Text();
        v1::ImportMetaResponse resp;
        s = service.ImportMeta(&ctx, &req, &resp);
        break;
      }
      case 7: {
        what = "CopyProject";
        v1::CopyProjectRequest req;
        req.set_source(f.Project());
        req.set_target(f.Pick(2) ? f.Project() : f.Text());
        int sets = static_cast<int>(f.Pick(3));
        static const char* kPaths[] = {"services.web.count=", "services.web.tags[a.b]=", "fabric.vlan=",
                                       "services.web.cns.0=", "meta.x="};
        for (int k = 0; k < sets; ++k) {
          req.add_set(f.Pick(2) ? f.Text() : std::string(kPaths[f.Pick(std::size(kPaths))]) + f.Text());
        }
        if (f.Pick(3) == 0) req.add_meta(f.Text());
        req.set_no_meta(f.Pick(4) == 0);
        req.set_dry_run(f.Pick(2) == 0);
        v1::CopyProjectResponse resp;
        s = service.CopyProject(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
      case 8: {
        what = "ReceiveCopy";
        v1::ReceiveCopyRequest req;
        static const char* kTargets[] = {"", "new"};
        req.set_target(f.Pick(3) == 0 ? f.Project() : f.Pick(2) ? f.Text() : absl::StrCat(kTargets[1], i));
        req.set_manifest(f.Manifest());
        int entries = static_cast<int>(f.Pick(3));
        for (int k = 0; k < entries; ++k) (*req.mutable_meta())[f.Pick(2) ? f.Text() : "m" + std::to_string(k)] = f.Text();
        if (f.Pick(3) == 0) (*req.mutable_secrets())[f.Pick(2) ? f.Text() : "s"] = f.Text();
        req.set_dry_run(f.Pick(2) == 0);
        req.set_origin(f.Text());
        v1::CopyProjectResponse resp;
        s = service.ReceiveCopy(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
      case 10:
      case 11: {
        what = "ReceiveVersion";
        v1::ReceiveVersionRequest req;
        req.set_project(f.Pick(4) == 0 ? f.Text() : f.Project());
        req.set_manifest(f.Manifest());
        static const char* kIds[] = {"", "6d1f2c3a-0b9e-4c1d-8e7f-2a3b4c5d6e7f", "not-a-uuid"};
        req.set_version_uuid(f.Pick(4) == 0 ? f.Text() : kIds[f.Pick(std::size(kIds))]);
        req.set_dry_run(f.Pick(3) == 0);
        req.set_origin(f.Text());
        v1::ApplyResponse resp;
        s = service.ReceiveVersion(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
      case 12: {
        v1::ListRolloutsRequest list;
        list.set_project(f.Project());
        list.set_all(f.Pick(2) == 0);
        v1::ListRolloutsResponse listed;
        if (f.Pick(2) == 0) {
          what = "ListRollouts";
          s = service.ListRollouts(&ctx, &list, &listed);
          reply_bytes = listed.ByteSizeLong();
          break;
        }
        what = "CancelRollout";
        v1::CancelRolloutRequest req;
        req.set_project(f.Project());
        req.set_rollout(f.Text());
        v1::CancelRolloutResponse resp;
        s = service.CancelRollout(&ctx, &req, &resp);
        break;
      }
      default: {
        what = "GetVersion";
        v1::GetVersionRequest req;
        req.set_project(f.Project());
        req.set_version(f.Pick(2) ? "current" : f.Text());
        req.set_include_manifest(true);
        v1::GetVersionResponse resp;
        s = service.GetVersion(&ctx, &req, &resp);
        reply_bytes = resp.ByteSizeLong();
        break;
      }
    }
    ASSERT_TRUE(Acceptable(s)) << "case " << i << " " << what << ": code " << s.error_code() << " \""
                               << s.error_message().substr(0, 300) << "\"";
    EXPECT_LE(reply_bytes, static_cast<size_t>(Limits::kMaxGrpcMessageBytes));
    (s.ok() ? ok : refused)[what]++;
  }
  for (const auto& kv : ok) std::cout << kv.first << ": " << kv.second << " ok, " << refused[kv.first] << " refused\n";
  EXPECT_GT(ok["Apply"], 0);
  EXPECT_GT(refused["Apply"], 0);
  EXPECT_GT(ok["SetMeta"], 0);
  EXPECT_GT(ok["CopyProject"], 0);
  EXPECT_GT(refused["CopyProject"], 0);
  EXPECT_GT(ok["ReceiveCopy"], 0);
  EXPECT_GT(refused["ReceiveCopy"], 0);
  EXPECT_TRUE((*store)->Verify().ok());
}

}  // namespace
}  // namespace mariposa
