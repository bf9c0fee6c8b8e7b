// `mariposa import compose` (projects/compose.h) on any input: an accepted
// Compose file gives YAML that reads back, notes within the file's lines,
// and a manifest parse that neither crashes nor hangs.
#include <cstdint>
#include <string>

#include "absl/strings/str_split.h"
#include "projects/compose.h"
#include "projects/manifest.h"
#include "projects/yaml_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  mariposa::ComposeOptions o;
  o.project = "fuzz";
  o.vlan = size % 2 == 0 ? 0 : 10;
  o.env_files["a.env"] = "A=1\nB='x y'\n";
  (void)mariposa::ComposeEnvFiles(text);
  auto r = mariposa::ImportCompose(text, o);
  if (!r.ok()) return 0;
  mariposa::YamlMark mark;
  if (!mariposa::YamlDocument::Parse(r->manifest, &mark).ok()) __builtin_trap();
  // YAML's line breaks: \n, \r (alone or before \n: counted twice here, an
  // upper bound), and NEL, LINE and PARAGRAPH SEPARATOR.
  int lines = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    lines += c == '\n' || c == '\r' || (c == 0xc2 && i + 1 < text.size() && (unsigned char)text[i + 1] == 0x85) ||
             (c == 0xe2 && i + 2 < text.size() && (unsigned char)text[i + 1] == 0x80 &&
              ((unsigned char)text[i + 2] == 0xa8 || (unsigned char)text[i + 2] == 0xa9));
  }
  for (const mariposa::ComposeNote& n : r->notes) {
    if (n.line < 0 || n.line > lines) __builtin_trap();
  }
  (void)mariposa::ParseManifest(r->manifest, mariposa::ParseOptions{});
  return 0;
}
