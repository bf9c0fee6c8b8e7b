// What the manifest tests share: a parse that must succeed, and the errors
// of one that must fail.
#ifndef MARIPOSA_PROJECTS_MANIFEST_TESTING_H_
#define MARIPOSA_PROJECTS_MANIFEST_TESTING_H_

#include <string>

#include "gtest/gtest.h"
#include "projects/manifest.h"

namespace mariposa::manifest_testing {

inline Manifest MustParse(const std::string& text, const std::string& project = "") {
  ParseOptions o;
  o.filename = "t.yaml";
  o.project_override = project;
  ParseResult r = ParseManifest(text, o);
  std::string errs;
  for (const auto& e : r.errors) errs += e.ToString() + "\n";
  EXPECT_TRUE(r.manifest.has_value()) << errs;
  return r.manifest.value_or(Manifest{});
}

// All errors of a bad manifest, one per line.
inline std::string Errors(const std::string& text) {
  ParseOptions o;
  o.filename = "t.yaml";
  ParseResult r = ParseManifest(text, o);
  EXPECT_FALSE(r.manifest.has_value());
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

}  // namespace mariposa::manifest_testing

#endif  // MARIPOSA_PROJECTS_MANIFEST_TESTING_H_
