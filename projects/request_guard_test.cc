// RequestGuard against a real gRPC call: a client that gives up is noticed
// (within the poll interval), and stays noticed.
#include "projects/request_guard.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "gtest/gtest.h"
#include "mariposa/v1/admin.grpc.pb.h"

namespace mariposa {
namespace {

// Ping spins on Check() until it says stop (or 20 s of clock pass), and
// records what it said and how many times it was asked.
class SpinningAdmin : public v1::Admin::Service {
 public:
  grpc::Status Ping(grpc::ServerContext* ctx, const v1::PingRequest* req, v1::PingResponse*) override {
    RequestGuard guard(ctx, RealClock::Get(), *req);
    absl::Time start = RealClock::Get()->Now();
    absl::Status s;
    int64_t checks = 0;
    while ((s = guard.Check()).ok() && RealClock::Get()->Now() - start < absl::Seconds(20)) ++checks;
    noticed_after_ = RealClock::Get()->Now() - start;
    checks_ = checks;
    // Asked again later, it still says cancelled.
    again_ = guard.Check();
    result_ = s;
    done_.store(true);
    return grpc::Status::OK;
  }
  std::atomic<bool> done_{false};
  absl::Status result_, again_;
  absl::Duration noticed_after_;
  int64_t checks_ = 0;
};

TEST(RequestGuardTest, ACancelledCallIsNoticedAndStaysNoticed) {
  SpinningAdmin admin;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&admin);
  auto server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  auto stub = v1::Admin::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                     grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v1::PingRequest req;
  v1::PingResponse resp;
  grpc::Status s = stub->Ping(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  server->Shutdown();
  ASSERT_TRUE(admin.done_.load());
  EXPECT_TRUE(absl::IsCancelled(admin.result_)) << admin.result_;
  EXPECT_TRUE(absl::IsCancelled(admin.again_)) << admin.again_;
  // Noticed soon after the deadline, not at the 20 s give-up.
  EXPECT_LT(admin.noticed_after_, absl::Seconds(5));
  // Checking is cheap: gRPC is not polled at every check (that was
  // tens of microseconds each, a few thousand in 200 ms).
  EXPECT_GT(admin.checks_, 20000) << "checks in 200 ms";
}

}  // namespace
}  // namespace mariposa
