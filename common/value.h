// A small ordered document tree (string, integer, number, bool, map, list)
// with deterministic YAML and JSON output; the canonical manifest and the
// CLI's -o json|yaml are both written through it.
#ifndef MARIPOSA_COMMON_VALUE_H_
#define MARIPOSA_COMMON_VALUE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace mariposa {

class Value {
 public:
  enum class Kind { kNull, kString, kInt, kDouble, kBool, kMap, kList };

  Value() = default;
  static Value Str(std::string s);
  static Value Int(int64_t i);
  static Value Double(double d);
  static Value Bool(bool b);
  static Value Map();
  static Value List();

  Kind kind() const { return kind_; }
  const std::string& str() const { return str_; }
  int64_t int_value() const { return int_; }
  double double_value() const { return double_; }
  bool bool_value() const { return bool_; }
  // Map entries keep insertion order (callers insert sorted when order matters).
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  const std::vector<Value>& items() const { return items_; }

  // A map whose entries are `m`'s, in its (sorted) order.
  static Value FromMap(std::map<std::string, Value> m);
  // A map of `entries` sorted by key (each key once; no map nodes made).
  static Value FromEntries(std::vector<std::pair<std::string, Value>> entries);

  // For maps: appends key (replacing an existing one). Returns *this.
  Value& Set(const std::string& key, Value v);
  // For maps: appends key; the caller guarantees it is new (O(1)).
  Value& Append(std::string key, Value v);
  // For lists: appends.
  Value& Add(Value v);
  bool empty() const { return entries_.empty() && items_.empty(); }
  // For maps: the value of `key`, or nullptr.
  Value* Find(absl::string_view key);
  // For maps: removes `key`; false when it was not there.
  bool Remove(absl::string_view key);
  // For lists: the items, to change in place; for maps, the entries' values.
  std::vector<Value>& mutable_items() { return items_; }
  std::vector<std::pair<std::string, Value>>& mutable_entries() { return entries_; }

  std::string ToJson(bool pretty = false) const;
  // Appends ToJson() to `out`.
  void AppendJson(std::string* out) const { WriteJson(out, false, 0); }
  std::string ToYaml() const;

 private:
  void WriteJson(std::string* out, bool pretty, int indent) const;
  void WriteYaml(std::string* out, int indent, bool in_list) const;

  Kind kind_ = Kind::kNull;
  std::string str_;
  int64_t int_ = 0;
  double double_ = 0;
  bool bool_ = false;
  std::vector<std::pair<std::string, Value>> entries_;
  std::vector<Value> items_;
};

// JSON string escaping, quotes included.
std::string JsonQuote(const std::string& s);
// Appends JsonQuote(s) to `out`.
void AppendJsonQuoted(absl::string_view s, std::string* out);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_VALUE_H_
