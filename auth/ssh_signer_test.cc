// The client side of HTTP Signature: `triton` CLI profiles read as the
// triton CLI writes them, and signatures made with keys ssh-keygen wrote
// (OpenSSH format: Ed25519, RSA, ECDSA P-384; PEM RSA) that the server's
// check (auth/http_signature.h) takes. ssh-agent is covered end to end by
// tests/triton_signature_e2e_test.cc.
#include "auth/ssh_signer.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "auth/client.h"
#include "auth/http_signature.h"
#include "gtest/gtest.h"

namespace mariposa::auth {
namespace {

std::string Read(const std::string& path) {
  auto t = ReadSmallFile(path, "file");
  return t.ok() ? *t : "";
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Tmp(const std::string& name) {
  std::string d = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  mkdir(d.c_str(), 0700);
  return d;
}

TEST(SshSignerTest, KeysSshKeygenWroteSignWhatTheServerVerifies) {
  const std::string dir = "auth/testdata/ssh";
  for (const char* name : {"id_ed25519", "id_rsa", "id_ecdsa", "pem_rsa"}) {
    SCOPED_TRACE(name);
    auto pub = ParseSshPublicKey(Read(absl::StrCat(dir, "/", name, ".pub")));
    ASSERT_TRUE(pub.ok()) << pub.status();
    for (const std::string& fp : {pub->md5, pub->sha256}) {
      TritonProfile p{"test", "jill", "", fp, ""};
      auto signer = SshSigner::Open(p, "", dir);
      ASSERT_TRUE(signer.ok()) << signer.status();
      EXPECT_EQ((*signer)->key_id(), absl::StrCat("/jill/keys/", pub->md5));
      EXPECT_EQ((*signer)->source(), absl::StrCat(dir, "/", name));
      auto sig = (*signer)->Sign("date: x\n(request-target): post /mariposa.v1.Projects/Apply");
      ASSERT_TRUE(sig.ok()) << sig.status();
      EXPECT_TRUE(VerifySignature(*pub, sig->first, "date: x\n(request-target): post /mariposa.v1.Projects/Apply",
                                  sig->second)
                      .ok())
          << sig->first;
      EXPECT_FALSE(VerifySignature(*pub, sig->first, "date: y", sig->second).ok());
      auto authz = (*signer)->Authorization("date: x", "date");
      ASSERT_TRUE(authz.ok());
      auto parsed = ParseSignatureAuthorization(*authz);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->key_id, (*signer)->key_id());
    }
  }
  TritonProfile sub{"test", "jill", "bob", "", ""};
  sub.key_id = ParseSshPublicKey(Read(dir + "/id_ed25519.pub"))->md5;
  auto s = SshSigner::Open(sub, "", dir);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->key_id().rfind("/jill/users/bob/keys/", 0), 0u);
}

TEST(SshSignerTest, WhatCannotSignSaysWhy) {
  const std::string dir = "auth/testdata/ssh";
  auto locked = SshSigner::Open({"t", "jill", "", ParseSshPublicKey(Read(dir + "/locked.pub"))->md5, ""}, "", dir);
  ASSERT_FALSE(locked.ok());
  EXPECT_NE(locked.status().message().find("ssh-add"), std::string::npos) << locked.status();
  auto missing = SshSigner::Open({"t", "jill", "", "SHA256:nosuchkey", ""}, "", dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("ssh-add"), std::string::npos);
  // An agent that is not there is named, and the directory is tried.
  auto noagent = SshSigner::Open({"t", "jill", "", "SHA256:nosuchkey", ""}, "/nonexistent/agent.sock", dir);
  ASSERT_FALSE(noagent.ok());
  EXPECT_NE(noagent.status().message().find("ssh-agent at /nonexistent/agent.sock"), std::string::npos)
      << noagent.status();
}

TEST(SshSignerTest, TritonProfiles) {
  std::string home = Tmp("home");
  mkdir((home + "/.triton").c_str(), 0700);
  mkdir((home + "/.triton/profiles.d").c_str(), 0700);
  Write(home + "/.triton/profiles.d/us-east.json",
        R"({"name": "us-east", "url": "https://us-east.api.example", "account": "jill", "keyId": "aa:bb", "user": "bob"})");
  Write(home + "/.triton/profiles.d/broken.json", R"({"name": "broken", "account": "jill"})");
  Write(home + "/.triton/profiles.d/junk.json", "not json");
  auto p = LoadTritonProfile("us-east", {}, home);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->account, "jill");
  EXPECT_EQ(p->user, "bob");
  EXPECT_EQ(p->key_id, "aa:bb");
  EXPECT_EQ(p->url, "https://us-east.api.example");
  // "current": $TRITON_PROFILE, else config.json's, else env.
  EXPECT_EQ(LoadTritonProfile("current", {{"TRITON_PROFILE", "us-east"}}, home)->name, "us-east");
  Write(home + "/.triton/config.json", R"({"profile": "us-east"})");
  EXPECT_EQ(LoadTritonProfile("current", {}, home)->name, "us-east");
  auto env = LoadTritonProfile("env", {{"SDC_ACCOUNT", "jill"}, {"SDC_KEY_ID", "cc:dd"}, {"TRITON_USER", "carol"}}, home);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->account, "jill");
  EXPECT_EQ(env->user, "carol");
  EXPECT_EQ(env->key_id, "cc:dd");
  // TRITON_* wins over SDC_*.
  EXPECT_EQ(LoadTritonProfile("env", {{"SDC_ACCOUNT", "old"}, {"TRITON_ACCOUNT", "new"}, {"SDC_KEY_ID", "k"}}, home)->account,
            "new");
  struct Bad {
    const char* name;
    std::map<std::string, std::string> env;
    const char* says;
  } bad[] = {
      {"nosuch", {}, "triton profile list"},
      {"broken", {}, "keyId"},
      {"junk", {}, "not a JSON object"},
      {"env", {{"SDC_ACCOUNT", "jill"}}, "TRITON_KEY_ID"},
      {"../etc", {}, "not a Triton profile name"},
  };
  for (const Bad& b : bad) {
    auto r = LoadTritonProfile(b.name, b.env, home);
    ASSERT_FALSE(r.ok()) << b.name;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace mariposa::auth
