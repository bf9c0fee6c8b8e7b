// A parsed YAML (or JSON) document with the position of every node, read with
// libyaml's event parser (fast, C, no exceptions) under hard bounds: input
// size, nesting depth, and a budget of nodes counted with every alias
// expanded. Aliases are resolved by reference (the node is shared, never
// copied); an alias inside the node it names (a recursive alias) is an error
// at its location. Every scalar passes the text rule of projects/limits.h.
// Immutable after Parse; thread-compatible.
#ifndef MARIPOSA_PROJECTS_YAML_DOCUMENT_H_
#define MARIPOSA_PROJECTS_YAML_DOCUMENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/cancel.h"
#include "common/value.h"

namespace mariposa {

class YamlNode;

struct YamlPair {
  const YamlNode& first;
  const YamlNode& second;
};

// 0-based line and column, like the YAML libraries report them.
struct YamlMark {
  int line = 0;
  int column = 0;
};

class YamlNode {
 public:
  enum class Kind { kNull, kScalar, kMap, kSequence };

  bool IsNull() const { return kind_ == Kind::kNull; }
  bool IsScalar() const { return kind_ == Kind::kScalar; }
  bool IsMap() const { return kind_ == Kind::kMap; }
  bool IsSequence() const { return kind_ == Kind::kSequence; }
  // The text of a scalar ("" for other kinds).
  const std::string& Scalar() const { return scalar_; }
  YamlMark Mark() const { return mark_; }
  size_t size() const { return kind_ == Kind::kMap ? pairs_.size() : items_.size(); }
  // Sequence items.
  const YamlNode& operator[](size_t i) const { return *items_[i]; }
  const std::vector<const YamlNode*>& items() const { return items_; }
  // Map entries, in document order.
  std::vector<YamlPair>::const_iterator begin() const { return pairs_.begin(); }
  std::vector<YamlPair>::const_iterator end() const { return pairs_.end(); }
  // The value of a scalar key in a map, or null.
  const YamlNode* Find(absl::string_view key) const;
  // The node as a document tree (scalars as strings, nulls as null). Aliases
  // are expanded; the parse budget bounds the result.
  Value ToValue() const;
  // Nodes of this subtree with aliases expanded (itself included).
  int64_t ExpandedSize() const { return weight_; }

 private:
  friend class YamlDocument;
  Kind kind_ = Kind::kNull;
  std::string scalar_;
  YamlMark mark_;
  std::vector<YamlPair> pairs_;
  std::vector<const YamlNode*> items_;
  int64_t weight_ = 1;
  bool open_ = false;  // while parsing: the node has not ended yet
};

// Bounds for one parse; the defaults are those of projects/limits.h.
struct YamlLimits {
  size_t max_bytes;
  int max_depth;
  int64_t max_nodes;
  size_t max_scalar_bytes;
  static YamlLimits Manifest();
};

class YamlDocument {
 public:
  // Parses the first document of `text`. INVALID_ARGUMENT on a syntax error,
  // text that breaks the text rule or an alias problem; RESOURCE_EXHAUSTED on
  // a broken limit; both with `error_mark` set to where it was found. The
  // status of `cancel` (checked every few thousand events) when the caller
  // gave up.
  static absl::StatusOr<std::unique_ptr<YamlDocument>> Parse(absl::string_view text, YamlMark* error_mark,
                                                             const YamlLimits& limits = YamlLimits::Manifest(),
                                                             const Cancellation* cancel = nullptr);
  // An empty document has a null root.
  const YamlNode& root() const { return *root_; }

 private:
  // Builds the tree from the parser's events (yaml_document.cc).
  class Builder;
  // A new node whose address never changes: nodes are made in chunks that
  // grow (a deque's 512-byte blocks cost a malloc every 5 nodes).
  YamlNode* NewNode();
  std::vector<std::unique_ptr<YamlNode[]>> chunks_;
  size_t chunk_size_ = 0, chunk_used_ = 0;
  const YamlNode* root_ = nullptr;
};

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_YAML_DOCUMENT_H_
