// The HTTP Signature checks against signatures Joyent's sshpk made (the
// library under npm http-signature and smartdc-auth): one signing string,
// signed by an Ed25519, an RSA and an ECDSA P-256 key; and the parsers,
// the date rule and the replay guard by tables.
#include "auth/http_signature.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace mariposa::auth {
namespace {

constexpr char kSigned[] = "date: Sun, 29 Nov 2026 06:00:00 GMT\n(request-target): post /v1/projects/jill-web:apply";

struct Vector {
  const char* algorithm;
  const char* key;
  const char* signature;
  const char* md5;
  const char* sha256;
};

const Vector kVectors[] = {
    {"ed25519-sha512", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKHe/UQGkEBH4zSP38cZUijvxddHEM5lHQwHlkFk16TP jill",
     "Lr617MGzjaY0bX+AqJkUWXoXUb71Q0qOBo8vN2Yrcj/8GOkiKsfhD7VQb0Qt4SQkM9FyPPv/cPcMSTq7axqQDg==",
     "64:f5:39:9d:f1:9a:ab:5b:c8:7f:e9:d2:00:53:c5:6e", "SHA256:o/Tlj0KIaAuheAm05ve+txlWCyFEKDoLlMnOferATIA"},
    {"rsa-sha256",
     "ssh-rsa "
     "AAAAB3NzaC1yc2EAAAADAQABAAABAQDu1I8GUALc295cpcdSzUvdb/2TfcaC8bo+wzDVONSgzbMJJhkY10LxGrStPNmuvsquz+wd86ux+"
     "XOsu0Heo4sGqzF6/rXQKjnID4V1A5zKRPC9/HL1tsbVsAW6iwE+A2YjeDJR61X6zyHakImzbqInUv5zfcA9W3BQLc9kQO7G8J1TKyG38DOn89nmDD53"
     "BvWzGQwY14hLe1GL/fpDzQfaKHIwK9LwV1qeSZ4H0+gn15+osf2IRjuwcI0fZ+2tko2p4V4VndfpIvn6P09eIOTJraZk5ln8YEjBFmR4KdHP/"
     "NV5O3ICInRS0rLVUG/fO1VN/0w9M+gKi8psnMNtslHN jillrsa",
     "v7wzocf4suBcAV/pafXdD/1Vp1l1hBLs8O+u/eltNwxu2OoXlRYmU9aYYoqCqYRB/YPMWVvJpYQbpB8CUL3TJV373Mw229k6K2JAy4bBCcT9tF0fVkRy3A"
     "qEZFOyKOH6VDWE1RUuvYFIBoGLBehJrUhMYfMFUF6/guWalSZobWTx8WfVrJU4tFGgUftYBg/KWdwyGhJBnQVPSfmsn2BUZ+ReDWDQVpzZHhIQf8Tm81uN"
     "gbtJ3Pt/p95ixJVXIpbLAySpzYvmvzi8F8MKoyNCzihFEWdifgJN6Pc7TYQB40puCV7U3GC3KHvQnrtrnQ8UFofTjPoKTj/ckoWWPqelCQ==",
     "eb:93:82:82:19:a0:c3:6c:83:4f:32:5b:79:c8:c5:20", "SHA256:MjXxdrZp3hUiJH6TtwaxOQ0tpG4HiO14dUtPrB1lXbA"},
    {"ecdsa-sha256",
     "ecdsa-sha2-nistp256 "
     "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAzCWSLphaWlJR9dwlG1i9UO6Cb8/Y/gKBePYf9dl5pd2pfGWXn4w2xGRC03Yw6Rok"
     "sAYmV4B2q5iSt14CoLado= bob",
     "MEYCIQCHfSxckQ+GAL+PfsKLBDfvtKLLcK8bO/8hssRVgRUIWgIhAJzBFqcb12Tw0cD3u1lTrhnYR8KEyP9ULOSKtFQppweU",
     "04:ef:2f:fb:7f:b8:62:d1:ab:84:1f:cd:4a:f5:d4:b9", "SHA256:vx+9udT/5u/oqvhVfg5VrsgLIo7tdtyVwhZgoJDscdk"},
};

TEST(HttpSignatureTest, SshpksSignaturesVerifyAndNothingElseDoes) {
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(v.algorithm);
    auto key = ParseSshPublicKey(v.key);
    ASSERT_TRUE(key.ok()) << key.status();
    EXPECT_EQ(key->md5, v.md5);
    EXPECT_EQ(key->sha256, v.sha256);
    EXPECT_TRUE(VerifySignature(*key, v.algorithm, kSigned, v.signature).ok());
    // One byte of the request changed: refused.
    std::string altered = kSigned;
    altered.back() = 'Y';
    absl::Status st = VerifySignature(*key, v.algorithm, altered, v.signature);
    EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated);
    EXPECT_NE(st.message().find("does not match"), std::string::npos) << st;
    // Another key's signature: refused.
    for (const Vector& other : kVectors) {
      if (&other == &v) continue;
      EXPECT_FALSE(VerifySignature(*key, v.algorithm, kSigned, other.signature).ok()) << other.algorithm;
    }
    // Fingerprints in every form ssh-keygen and Triton write them.
    EXPECT_TRUE(FingerprintMatches(*key, v.md5));
    EXPECT_TRUE(FingerprintMatches(*key, absl::StrCat("MD5:", v.md5)));
    EXPECT_TRUE(FingerprintMatches(*key, absl::StrReplaceAll(v.md5, {{":", ""}})));
    EXPECT_TRUE(FingerprintMatches(*key, v.sha256));
    EXPECT_FALSE(FingerprintMatches(*key, "SHA256:nope"));
    EXPECT_FALSE(FingerprintMatches(*key, ""));
  }
}

TEST(HttpSignatureTest, AnAlgorithmThatDoesNotFitTheKeyIsRefused) {
  auto rsa = ParseSshPublicKey(kVectors[1].key);
  ASSERT_TRUE(rsa.ok());
  EXPECT_FALSE(VerifySignature(*rsa, "ed25519-sha512", kSigned, kVectors[1].signature).ok());
  EXPECT_FALSE(VerifySignature(*rsa, "rsa-sha512", kSigned, kVectors[1].signature).ok());
  EXPECT_FALSE(VerifySignature(*rsa, "rsa-sha1", kSigned, kVectors[1].signature).ok());
  EXPECT_FALSE(VerifySignature(*rsa, "rsa-sha256", kSigned, "not base64!").ok());
}

TEST(HttpSignatureTest, BadKeysAreRefusedWithWhy) {
  for (const char* bad : {"", "ssh-rsa", "ssh-rsa !!!", "ssh-ed25519 AAAAC3NzaC1yc2E=",
                          "ssh-dss AAAAB3NzaC1kc3MAAACBAP", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAQA="}) {
    EXPECT_FALSE(ParseSshPublicKey(bad).ok()) << bad;
  }
}

TEST(HttpSignatureTest, AuthorizationHeaders) {
  struct Case {
    const char* header;
    const char* error;  // "" = taken
  } cases[] = {
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha256",signature="c2ln")h", ""},
      {R"h(signature keyId="/jill/keys/aa", algorithm="ED25519-SHA512", headers="date (request-target)", signature="c2ln")h", ""},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha256",headers="x-date",signature="c2ln",created=1700000000)h", ""},
      {R"h(Bearer mpt_x)h", "does not start"},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha256")h", "has no signature"},
      {R"h(Signature algorithm="rsa-sha256",signature="c2ln")h", "has no keyId"},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha1",signature="c2ln")h", "rsa-sha256"},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="hmac-sha256",signature="c2ln")h", "takes"},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha256",headers="(request-target)",signature="c2ln")h", "date"},
      {R"h(Signature keyId="/jill/keys/aa",keyId="/x/keys/b",algorithm="rsa-sha256",signature="c2ln")h", "twice"},
      {R"h(Signature keyId=/jill/keys/aa,algorithm="rsa-sha256",signature="c2ln")h", "unquoted"},
      {R"h(Signature keyId="/jill/keys/aa,algorithm="rsa-sha256",signature="c2ln")h", ""},  // keyId swallows; then fails below
      {R"h(Signature keyId="/jill/keys/aa" algorithm="rsa-sha256",signature="c2ln")h", "no comma"},
      {R"h(Signature keyId="/jill/keys/aa",algorithm="rsa-sha256",signature="c2ln)h", "unquoted at its end"},
      {R"h(Signature ke y="x")h", "bad parameter name"},
      {R"h(Signature keyId)h", "without a value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header);
    auto p = ParseSignatureAuthorization(c.header);
    if (std::string(c.header).find("aa,algorithm") != std::string::npos) {
      // keyId took everything up to its closing quote: no algorithm is left.
      EXPECT_FALSE(p.ok());
      continue;
    }
    if (*c.error == '\0') {
      ASSERT_TRUE(p.ok()) << p.status();
      EXPECT_EQ(p->key_id, "/jill/keys/aa");
      EXPECT_EQ(p->signature, "c2ln");
    } else {
      ASSERT_FALSE(p.ok());
      EXPECT_NE(p.status().message().find(c.error), std::string::npos) << p.status();
    }
  }
  auto p = ParseSignatureAuthorization(R"h(Signature keyId="/a/keys/b",algorithm="ED25519-SHA512",signature="s")h");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->algorithm, "ed25519-sha512");
  EXPECT_EQ(p->headers, std::vector<std::string>{"date"});
  EXPECT_FALSE(ParseSignatureAuthorization(std::string(20000, 'S')).ok());
}

TEST(HttpSignatureTest, KeyIds) {
  auto a = ParseKeyId("/jill/keys/64:f5:39");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->account, "jill");
  EXPECT_EQ(a->user, "");
  EXPECT_EQ(a->fingerprint, "64:f5:39");
  auto u = ParseKeyId("/jill/users/bob/keys/SHA256:abc");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->account, "jill");
  EXPECT_EQ(u->user, "bob");
  EXPECT_EQ(u->fingerprint, "SHA256:abc");
  for (const char* bad : {"", "jill/keys/aa", "/jill/keys/", "/my/keys/aa", "/jill/key/aa", "/jill/users/bob/keys",
                          "/jill//keys/aa", "/jill/users/bob/keys/aa/more", "//keys/aa"}) {
    EXPECT_FALSE(ParseKeyId(bad).ok()) << bad;
  }
}

TEST(HttpSignatureTest, SigningStrings) {
  auto p = ParseSignatureAuthorization(
      R"h(Signature keyId="/a/keys/b",algorithm="rsa-sha256",headers="(request-target) host date (keyid) (algorithm)",signature="s")h");
  ASSERT_TRUE(p.ok());
  std::map<std::string, std::string> h = {{"host", "example"}, {"date", "D"}};
  auto lookup = [&](absl::string_view name) -> std::optional<std::string> {
    auto it = h.find(std::string(name));
    if (it == h.end()) return std::nullopt;
    return it->second;
  };
  auto ss = SigningString(*p, "get /v1/projects?x=1", lookup);
  ASSERT_TRUE(ss.ok());
  EXPECT_EQ(*ss,
            "(request-target): get /v1/projects?x=1\nhost: example\ndate: D\n(keyid): /a/keys/b\n(algorithm): rsa-sha256");
  EXPECT_EQ(SignedDate(*ss), "D");
  h.erase("host");
  auto missing = SigningString(*p, "get /", lookup);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("host"), std::string::npos);
  auto created = ParseSignatureAuthorization(R"h(Signature keyId="/a/keys/b",algorithm="rsa-sha256",headers="date (created)",signature="s")h");
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(SigningString(*created, "get /", lookup).ok());
  EXPECT_EQ(SignedDate("x-date: X\nother: y"), "X");
  EXPECT_EQ(SignedDate("(request-target): get /"), "");
}

TEST(HttpSignatureTest, TheSignedDateMustBeWithinFiveMinutes) {
  absl::Time now = absl::FromUnixSeconds(1795934400);  // Sun, 29 Nov 2026 06:40:00 GMT
  struct Case {
    const char* date;
    bool ok;
    const char* says;
  } cases[] = {
      {"Sun, 29 Nov 2026 06:40:00 GMT", true, ""},
      {"Sun, 29 Nov 2026 06:35:00 GMT", true, ""},
      {"Sun, 29 Nov 2026 06:45:00 GMT", true, ""},
      {"Sun, 29 Nov 2026 06:34:59 GMT", false, "behind"},
      {"Sun, 29 Nov 2026 06:45:01 GMT", false, "ahead"},
      {"Sun, 29 Nov 2026 06:40:00 UTC", true, ""},
      {"2026-11-29T06:40:00Z", false, "not an HTTP date"},
      {"", false, "not an HTTP date"},
  };
  for (const Case& c : cases) {
    absl::Status st = CheckSignedDate(c.date, now);
    EXPECT_EQ(st.ok(), c.ok) << c.date << ": " << st;
    if (!c.ok) {
      EXPECT_NE(st.message().find(c.says), std::string::npos) << st;
    }
  }
}

TEST(HttpSignatureTest, ReplayGuardRefusesASecondUseWithinTheWindowAndStaysBounded) {
  absl::Time t0 = absl::FromUnixSeconds(1000);
  ReplayGuard g(3, absl::Minutes(10));
  EXPECT_TRUE(g.FirstUse("a", t0));
  EXPECT_FALSE(g.FirstUse("a", t0 + absl::Minutes(9)));
  EXPECT_TRUE(g.FirstUse("b", t0));
  // Past the window it is forgotten (its date is refused by then anyway).
  EXPECT_TRUE(g.FirstUse("a", t0 + absl::Minutes(11)));
  EXPECT_LE(g.size(), 3u);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(g.FirstUse(absl::StrCat("s", i), t0 + absl::Minutes(11)));
  EXPECT_LE(g.size(), 3u);
  EXPECT_GT(g.overflowed(), 0u);
  EXPECT_FALSE(g.FirstUse("s99", t0 + absl::Minutes(11)));
}

}  // namespace
}  // namespace mariposa::auth
