#include "projects/copy.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "projects/limits.h"
#include "projects/yaml_document.h"

namespace mariposa {
namespace {

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--set \"", absl::CHexEscape(text), "\": ", why,
                                                 "; give PATH=VALUE, e.g. services.web.count=1 or "
                                                 "services.web.tags[com.example.tier]=staging"));
}

// "services.web.tags[a.b]" -> services, web, tags, a.b
absl::StatusOr<std::vector<std::string>> SplitPath(absl::string_view text, absl::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      size_t close = path.find(']', i + 1);
      if (close == absl::string_view::npos) return Bad(text, "a '[' without its ']'");
      if (close == i + 1) return Bad(text, "an empty [] in the path");
      out.emplace_back(path.substr(i + 1, close - i - 1));
      i = close + 1;
      if (i < path.size() && path[i] != '.' && path[i] != '[') return Bad(text, "']' must end a key");
      if (i < path.size() && path[i] == '.') ++i;
      if (i == path.size() && path.back() == '.') return Bad(text, "the path ends with '.'");
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    if (end == absl::string_view::npos) end = path.size();
    if (end == i) return Bad(text, "an empty key in the path (two dots, or a leading one)");
    out.emplace_back(path.substr(i, end - i));
    i = end;
    if (i < path.size() && path[i] == '.') {
      ++i;
      if (i == path.size()) return Bad(text, "the path ends with '.'");
    }
  }
  if (out.empty()) return Bad(text, "no path before '='");
  if (out.size() > static_cast<size_t>(Limits::kMaxDepth)) return Bad(text, "the path is deeper than a manifest may be");
  for (const std::string& k : out) {
    if (absl::Status st = CheckText("a key in the path", k, Limits::kMaxKeyBytes); !st.ok()) {
      return Bad(text, st.message());
    }
  }
  return out;
}

// The list index `key` names in a list of `size` items (== size appends).
bool ListIndex(const std::string& key, size_t size, size_t* at) {
  if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return absl::ascii_isdigit(c); })) return false;
  uint64_t n;
  if (!absl::SimpleAtoi(key, &n) || n > size) return false;
  *at = static_cast<size_t>(n);
  return true;
}

// A scalar the manifest reads as a number or a boolean is written plain
// (`count: 3`, not `count: "3"`): the manifest reads a scalar's text, not
// its quotes, so this changes nothing it means.
void Plain(Value* v) {
  switch (v->kind()) {
    case Value::Kind::kString: {
      const std::string& s = v->str();
      int64_t n;
      bool digits = !s.empty() && s.size() <= 18 && (s == "0" || (s[0] != '0' && s[0] != '-' && s[0] != '+')) &&
                    std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
      if (digits && absl::SimpleAtoi(s, &n)) {
        *v = Value::Int(n);
      } else if (s == "true" || s == "false") {
        *v = Value::Bool(s == "true");
      }
      return;
    }
    case Value::Kind::kList:
      for (Value& i : v->mutable_items()) Plain(&i);
      return;
    case Value::Kind::kMap:
      for (auto& e : v->mutable_entries()) Plain(&e.second);
      return;
    default:
      return;
  }
}

}  // namespace

absl::StatusOr<ManifestOverride> ParseOverride(absl::string_view text) {
  size_t eq = text.find('=');
  if (eq == absl::string_view::npos) return Bad(text, "no '='");
  ManifestOverride o;
  o.text = std::string(text);
  absl::string_view path = absl::StripAsciiWhitespace(text.substr(0, eq));
  auto keys = SplitPath(text, path);
  if (!keys.ok()) return keys.status();
  o.path = std::move(*keys);
  YamlMark mark;
  YamlLimits limits = YamlLimits::Manifest();
  auto doc = YamlDocument::Parse(text.substr(eq + 1), &mark, limits);
  if (!doc.ok()) {
    return Bad(text, absl::StrCat("its VALUE is not YAML (", doc.status().message(), "); quote a string that "
                                  "holds YAML's special characters, e.g. 'a: b'"));
  }
  o.value = (*doc)->root().ToValue();
  Plain(&o.value);
  return o;
}

absl::Status ApplyOverride(const ManifestOverride& o, Value* doc) {
  if (doc->kind() != Value::Kind::kMap) return Bad(o.text, "the manifest is not a map");
  Value* at = doc;
  const bool remove = o.value.kind() == Value::Kind::kNull;
  std::string walked;
  // Checked to the end before anything changes: a refused override leaves
  // the document as it was.
  for (size_t k = 0; k + 1 < o.path.size(); ++k) {
    const std::string& key = o.path[k];
    absl::StrAppend(&walked, walked.empty() ? "" : ".", key);
    if (at->kind() == Value::Kind::kList) {
      size_t i;
      if (!ListIndex(key, at->items().size(), &i) || i == at->items().size()) {
        return Bad(o.text, absl::StrCat(walked, ": ", at->items().size(), " items, numbered from 0"));
      }
      at = &at->mutable_items()[i];
      continue;
    }
    if (at->kind() != Value::Kind::kMap) return Bad(o.text, absl::StrCat(walked, " is inside a value, not a map"));
    Value* next = at->Find(key);
    if (next == nullptr || next->kind() == Value::Kind::kNull) {
      if (remove) return absl::OkStatus();  // nothing to remove
      // The rest of the path is made of maps.
      Value made = o.value;
      for (size_t j = o.path.size() - 1; j > k; --j) {
        Value m = Value::Map();
        m.Set(o.path[j], std::move(made));
        made = std::move(m);
      }
      at->Set(key, std::move(made));
      return absl::OkStatus();
    }
    if (next->kind() != Value::Kind::kMap && next->kind() != Value::Kind::kList) {
      return Bad(o.text, absl::StrCat(walked, " is a value, not a map or a list"));
    }
    at = next;
  }
  const std::string& last = o.path.back();
  if (at->kind() == Value::Kind::kList) {
    size_t i;
    if (!ListIndex(last, at->items().size(), &i)) {
      return Bad(o.text, absl::StrCat(walked.empty() ? "the list" : walked, ": ", at->items().size(),
                                      " items, numbered from 0 (the count appends)"));
    }
    std::vector<Value>& items = at->mutable_items();
    if (remove) {
      if (i < items.size()) items.erase(items.begin() + static_cast<ptrdiff_t>(i));
    } else if (i == items.size()) {
      items.push_back(o.value);
    } else {
      items[i] = o.value;
    }
    return absl::OkStatus();
  }
  if (at->kind() != Value::Kind::kMap) return Bad(o.text, absl::StrCat(walked, " is a value, not a map"));
  if (remove) {
    at->Remove(last);
  } else {
    at->Set(last, o.value);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CopiedManifest(absl::string_view text, const std::string& target,
                                           const std::vector<std::string>& sets) {
  YamlMark mark;
  auto doc = YamlDocument::Parse(text, &mark);
  if (!doc.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the source's manifest does not parse at line ", mark.line + 1,
                                                   ", column ", mark.column + 1, ": ", doc.status().message()));
  }
  Value v = (*doc)->root().ToValue();
  if (v.kind() != Value::Kind::kMap) {
    return absl::InvalidArgumentError("the source's manifest is not a map; nothing to copy");
  }
  Plain(&v);
  v.Set("project", Value::Str(target));
  for (const std::string& s : sets) {
    auto o = ParseOverride(s);
    if (!o.ok()) return o.status();
    if (o->path.size() == 1 && o->path[0] == "project") {
      return Bad(s, "the copy's name is its project; give it as DST, not with --set");
    }
    if (absl::Status st = ApplyOverride(*o, &v); !st.ok()) return st;
  }
  std::string out = v.ToYaml();
  if (out.size() > Limits::kMaxManifestBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the copy's manifest would be ", out.size(),
                                                   " bytes, above the limit of ", Limits::kMaxManifestBytes,
                                                   " (its aliases written out); shorten the source's manifest"));
  }
  return out;
}

}  // namespace mariposa
