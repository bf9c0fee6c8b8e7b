// A project copy's manifest (projects/copy.h): the input's first line is
// one --set, the rest the source's manifest. Whatever is accepted is written
// as YAML that reads back as the same document: copying the copy again
// changes nothing, and the copy's name is its `project:`.
#include <cstdint>
#include <string>

#include "projects/copy.h"
#include "projects/yaml_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string set = in.substr(0, nl);
  std::string text = nl == std::string::npos ? "" : in.substr(nl + 1);
  (void)mariposa::ParseOverride(set);
  auto copied = mariposa::CopiedManifest(text, "copy", {set});
  if (!copied.ok()) return 0;
  auto again = mariposa::CopiedManifest(*copied, "copy", {});
  if (!again.ok() || *again != *copied) __builtin_trap();
  mariposa::YamlMark mark;
  auto doc = mariposa::YamlDocument::Parse(*copied, &mark);
  if (!doc.ok()) __builtin_trap();
  const mariposa::YamlNode* project = (*doc)->root().Find("project");
  if (project == nullptr || project->Scalar() != "copy") __builtin_trap();
  return 0;
}
