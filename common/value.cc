#include "common/value.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mariposa {

Value Value::Str(std::string s) { Value v; v.kind_ = Kind::kString; v.str_ = std::move(s); return v; }
Value Value::Int(int64_t i) { Value v; v.kind_ = Kind::kInt; v.int_ = i; return v; }
Value Value::Double(double d) { Value v; v.kind_ = Kind::kDouble; v.double_ = d; return v; }
Value Value::Bool(bool b) { Value v; v.kind_ = Kind::kBool; v.bool_ = b; return v; }
Value Value::Map() { Value v; v.kind_ = Kind::kMap; return v; }
Value Value::List() { Value v; v.kind_ = Kind::kList; return v; }

Value& Value::Set(const std::string& key, Value v) {
  for (auto& e : entries_) {
    if (e.first == key) { e.second = std::move(v); return *this; }
  }
  entries_.emplace_back(key, std::move(v));
  return *this;
}

Value* Value::Find(absl::string_view key) {
  for (auto& e : entries_) {
    if (e.first == key) return &e.second;
  }
  return nullptr;
}

bool Value::Remove(absl::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

Value Value::FromMap(std::map<std::string, Value> m) {
  Value v = Map();
  v.entries_.reserve(m.size());
  for (auto& kv : m) v.entries_.emplace_back(kv.first, std::move(kv.second));
  return v;
}

Value Value::FromEntries(std::vector<std::pair<std::string, Value>> entries) {
  Value v = Map();
  using Entry = std::pair<std::string, Value>;
  auto by_key = [](const Entry* a, const Entry* b) { return a->first < b->first; };
  std::vector<Entry*> order;
  order.reserve(entries.size());
  for (Entry& e : entries) order.push_back(&e);
  if (std::is_sorted(order.begin(), order.end(), by_key)) {
    v.entries_ = std::move(entries);
    return v;
  }
  std::sort(order.begin(), order.end(), by_key);  // each entry is moved once, below
  v.entries_.reserve(entries.size());
  for (Entry* e : order) v.entries_.push_back(std::move(*e));
  return v;
}

Value& Value::Append(std::string key, Value v) {
  entries_.emplace_back(std::move(key), std::move(v));
  return *this;
}

Value& Value::Add(Value v) {
  items_.push_back(std::move(v));
  return *this;
}

void AppendJsonQuoted(absl::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0, plain = 0;  // s[plain, i) is copied as it is, in one append
  auto flush = [&] {
    out->append(s.data() + plain, i - plain);
  };
  while (i < s.size()) {
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80 && c != 0xc2 && c != 0xe2 && c != 0xef) {
      ++i;
      continue;
    }
    flush();
    // YAML (libyaml) takes NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR for
    // line breaks even inside quotes, and refuses DEL, the C1 controls,
    // U+FFFE, U+FFFF and a BOM there: they
    // are escaped (as JSON and YAML both read them), so the text reads back.
    auto next = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
    size_t used = 1;
    if (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {
      // NEL, and the C1 controls YAML does not print.
      absl::StrAppendFormat(out, "\\u%04x", next(1));
      used = 2;
    } else if (c == 0xef && next(1) == 0xbf && (next(2) == 0xbe || next(2) == 0xbf)) {
      out->append(next(2) == 0xbe ? "\\ufffe" : "\\uffff");  // YAML's non-characters
      used = 3;
    } else if (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {
      out->append(next(2) == 0xa8 ? "\\u2028" : "\\u2029");
      used = 3;
    } else if (c == 0xef && next(1) == 0xbb && next(2) == 0xbf) {
      out->append("\\ufeff");
      used = 3;
    } else {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c < 0x20 || c == 0x7f) absl::StrAppendFormat(out, "\\u%04x", c);
          else out->push_back(static_cast<char>(c));
      }
    }
    i += used;
    plain = i;
  }
  flush();
  out->push_back('"');
}

std::string JsonQuote(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendJsonQuoted(s, &out);
  return out;
}

namespace {

std::string FormatDouble(double d) {
  if (!std::isfinite(d)) return "0";
  std::string s = absl::StrFormat("%.6g", d);
  return s;
}

// Characters that make a plain YAML scalar mean something else.
bool NeedsQuote(unsigned char c) {
  static const auto* kTable = [] {
    auto* t = new std::array<bool, 256>();
    for (int c = 0; c < 256; ++c) (*t)[c] = c < 0x20 || c >= 0x7f;
    for (const char* p = ":#{}[],&*!|>'\"%@`\\"; *p; ++p) (*t)[static_cast<unsigned char>(*p)] = true;
    return t;
  }();
  return (*kTable)[c];
}

// Appends a YAML scalar that reads back as the same string: plain when safe,
// else double-quoted with JSON escapes (valid YAML).
void AppendYamlScalar(const std::string& s, std::string* out) {
  bool plain = !s.empty() && !absl::ascii_isspace(static_cast<unsigned char>(s.front())) &&
               !absl::ascii_isspace(static_cast<unsigned char>(s.back())) && s.front() != '-' &&
               s.front() != '?' && s.front() != '~';
  bool numeric = true;
  for (size_t i = 0; plain && i < s.size(); ++i) {
    unsigned char c = s[i];
    if (NeedsQuote(c)) plain = false;
    if (!(absl::ascii_isdigit(c) || c == '.' || c == '+' || c == 'e' || c == 'E')) numeric = false;
  }
  if (plain && numeric) plain = false;
  if (plain && s.size() <= 5) {
    // Words YAML would read as booleans or null.
    static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"};
    for (const char* w : kWords) {
      if (absl::EqualsIgnoreCase(s, w)) plain = false;
    }
  }
  if (plain) {
    out->append(s);
  } else {
    AppendJsonQuoted(s, out);
  }
}

}  // namespace

void Value::WriteJson(std::string* out, bool pretty, int indent) const {
  auto pad = [&](int level) {
    if (!pretty) return;
    out->push_back('\n');
    out->append(2 * level, ' ');
  };
  switch (kind_) {
    case Kind::kNull: out->append("null"); break;
    case Kind::kString: AppendJsonQuoted(str_, out); break;
    case Kind::kInt: absl::StrAppend(out, int_); break;
    case Kind::kDouble: out->append(FormatDouble(double_)); break;
    case Kind::kBool: out->append(bool_ ? "true" : "false"); break;
    case Kind::kMap: {
      if (entries_.empty()) { out->append("{}"); break; }
      out->push_back('{');
      bool first = true;
      for (const auto& e : entries_) {
        if (!first) out->push_back(',');
        first = false;
        pad(indent + 1);
        AppendJsonQuoted(e.first, out);
        out->append(pretty ? ": " : ":");
        e.second.WriteJson(out, pretty, indent + 1);
      }
      pad(indent);
      out->push_back('}');
      break;
    }
    case Kind::kList: {
      if (items_.empty()) { out->append("[]"); break; }
      out->push_back('[');
      bool first = true;
      for (const auto& i : items_) {
        if (!first) out->push_back(',');
        first = false;
        pad(indent + 1);
        i.WriteJson(out, pretty, indent + 1);
      }
      pad(indent);
      out->push_back(']');
      break;
    }
  }
}

std::string Value::ToJson(bool pretty) const {
  std::string out;
  WriteJson(&out, pretty, 0);
  return out;
}

// Block-style YAML. `indent` is the indentation of this node's entries.
void Value::WriteYaml(std::string* out, int indent, bool in_list) const {
  auto pad = [out, indent] { out->append(2 * indent, ' '); };
  switch (kind_) {
    case Kind::kMap: {
      if (entries_.empty()) { *out += " {}\n"; return; }
      bool first = true;
      if (!in_list) *out += "\n";
      for (const auto& e : entries_) {
        // The first entry of a map inside a list shares the "- " line.
        if (!(in_list && first)) pad();
        first = false;
        AppendYamlScalar(e.first, out);
        out->push_back(':');
        e.second.WriteYaml(out, indent + 1, false);
      }
      return;
    }
    case Kind::kList: {
      if (items_.empty()) { *out += " []\n"; return; }
      if (!in_list) *out += "\n";
      bool first = true;
      for (const auto& i : items_) {
        if (!(in_list && first)) pad();
        first = false;
        *out += "- ";
        if (i.kind_ == Kind::kMap || i.kind_ == Kind::kList) {
          if (i.empty()) {
            *out += i.kind_ == Kind::kMap ? "{}\n" : "[]\n";
          } else {
            i.WriteYaml(out, indent + 1, true);
          }
        } else {
          size_t at = out->size();
          i.WriteYaml(out, indent + 1, true);
          out->erase(at, 1);  // the scalar's leading space: "- " has one
        }
      }
      return;
    }
    case Kind::kNull: *out += " null\n"; return;
    case Kind::kString:
      out->push_back(' ');
      AppendYamlScalar(str_, out);
      out->push_back('\n');
      return;
    case Kind::kInt: absl::StrAppend(out, " ", int_, "\n"); return;
    case Kind::kDouble: absl::StrAppend(out, " ", FormatDouble(double_), "\n"); return;
    case Kind::kBool: *out += bool_ ? " true\n" : " false\n"; return;
  }
}

std::string Value::ToYaml() const {
  std::string out;
  if (kind_ == Kind::kMap || kind_ == Kind::kList) {
    if (empty()) return kind_ == Kind::kMap ? "{}\n" : "[]\n";
    WriteYaml(&out, 0, true);
    return out;
  }
  WriteYaml(&out, 0, false);
  return out.substr(1);
}

}  // namespace mariposa
