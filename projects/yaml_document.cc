#include "projects/yaml_document.h"

#include <algorithm>

#include <yaml.h>

#include "absl/status/status.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "projects/limits.h"

namespace mariposa {

const YamlNode* YamlNode::Find(absl::string_view key) const {
  for (const YamlPair& p : pairs_) {
    if (p.first.IsScalar() && p.first.Scalar() == key) return &p.second;
  }
  return nullptr;
}

Value YamlNode::ToValue() const {
  switch (kind_) {
    case Kind::kNull: return Value();
    case Kind::kScalar: return Value::Str(scalar_);
    case Kind::kSequence: {
      Value v = Value::List();
      for (const YamlNode* i : items_) v.Add(i->ToValue());
      return v;
    }
    case Kind::kMap: {
      Value v = Value::Map();
      for (const YamlPair& p : pairs_) v.Set(p.first.Scalar(), p.second.ToValue());
      return v;
    }
  }
  return Value();
}

YamlLimits YamlLimits::Manifest() {
  return YamlLimits{Limits::kMaxManifestBytes, Limits::kMaxDepth, Limits::kMaxNodes, Limits::kMaxValueBytes};
}

namespace {

// Plain scalars that YAML reads as null.
bool IsNullScalar(const yaml_event_t& e) {
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  absl::string_view s(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

YamlMark MarkOf(const yaml_mark_t& m) { return YamlMark{static_cast<int>(m.line), static_cast<int>(m.column)}; }

// Owns a libyaml parser and its current event.
class EventReader {
 public:
  explicit EventReader(absl::string_view text) {
    ok_ = yaml_parser_initialize(&parser_);
    if (ok_) yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~EventReader() {
    if (has_event_) yaml_event_delete(&event_);
    if (ok_) yaml_parser_delete(&parser_);
  }
  bool initialized() const { return ok_; }
  // Reads the next event; false on a syntax error (see Problem()).
  bool Next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = yaml_parser_parse(&parser_, &event_) != 0;
    return has_event_;
  }
  const yaml_event_t& event() const { return event_; }
  std::string Problem(YamlMark* mark) const {
    *mark = MarkOf(parser_.problem_mark);
    std::string msg = parser_.problem ? parser_.problem : "syntax error";
    if (parser_.context) msg = absl::StrCat(msg, " ", parser_.context);
    return msg;
  }

 private:
  yaml_parser_t parser_;
  yaml_event_t event_;
  bool ok_ = false;
  bool has_event_ = false;
};

}  // namespace

YamlNode* YamlDocument::NewNode() {
  if (chunk_used_ == chunk_size_) {
    chunk_size_ = std::min<size_t>(chunk_size_ == 0 ? 64 : 2 * chunk_size_, 4096);
    chunks_.push_back(std::make_unique<YamlNode[]>(chunk_size_));
    chunk_used_ = 0;
  }
  return &chunks_.back()[chunk_used_++];
}

absl::StatusOr<std::unique_ptr<YamlDocument>> YamlDocument::Parse(absl::string_view text, YamlMark* error_mark,
                                                                   const YamlLimits& limits,
                                                                   const Cancellation* cancel) {
  YamlMark unused;
  if (error_mark == nullptr) error_mark = &unused;
  // Syntax errors are INVALID_ARGUMENT; broken limits RESOURCE_EXHAUSTED
  // (both located).
  auto fail = [&](YamlMark at, std::string msg) {
    *error_mark = at;
    return absl::InvalidArgumentError(std::move(msg));
  };
  auto too_much = [&](YamlMark at, std::string msg) {
    *error_mark = at;
    return absl::ResourceExhaustedError(std::move(msg));
  };
  if (text.size() > limits.max_bytes) {
    return too_much(YamlMark{}, absl::StrCat("the text is ", text.size(), " bytes, over the limit of ", limits.max_bytes,
                                         " bytes; split the project or shorten its values"));
  }
  EventReader reader(text);
  if (!reader.initialized()) return absl::ResourceExhaustedError("cannot initialize the YAML parser");
  auto out = std::unique_ptr<YamlDocument>(new YamlDocument());
  std::vector<YamlNode*> stack;              // open maps and sequences
  std::vector<const YamlNode*> pending_key;  // per open map: its key awaiting a value
  absl::flat_hash_map<std::string, YamlNode*> anchors;
  int64_t expanded = 0;  // nodes of the document with aliases expanded
  int64_t events = 0;

  // Hangs a finished node (or an alias target) under the innermost open node.
  auto attach = [&](const YamlNode* child) {
    if (stack.empty()) {
      out->root_ = child;
      return;
    }
    YamlNode* parent = stack.back();
    if (parent->kind_ == YamlNode::Kind::kSequence) {
      parent->items_.push_back(child);
    } else if (pending_key.back() == nullptr) {
      pending_key.back() = child;
    } else {
      parent->pairs_.push_back(YamlPair{*pending_key.back(), *child});
      pending_key.back() = nullptr;
    }
    parent->weight_ += child->weight_;
  };
  auto anchor = [&](const unsigned char* name, YamlNode* node) {
    if (name != nullptr) anchors[reinterpret_cast<const char*>(name)] = node;
  };
  auto over_budget = [&](YamlMark at) {
    return too_much(at, absl::StrCat("the document expands to more than ", limits.max_nodes,
                                 " nodes (aliases count once per use); make it smaller or use fewer aliases"));
  };

  while (true) {
    if (!reader.Next()) {
      YamlMark at;
      std::string msg = reader.Problem(&at);
      return fail(at, absl::StrCat("not valid YAML or JSON: ", msg));
    }
    const yaml_event_t& e = reader.event();
    YamlMark at = MarkOf(e.start_mark);
    if (cancel != nullptr && (++events & 4095) == 0) {
      if (absl::Status s = cancel->Check(); !s.ok()) return s;
    }
    switch (e.type) {
      case YAML_STREAM_START_EVENT:
      case YAML_STREAM_END_EVENT:
        if (e.type == YAML_STREAM_END_EVENT) goto done;
        break;
      case YAML_DOCUMENT_END_EVENT:
        goto done;  // only the first document counts
      case YAML_ALIAS_EVENT: {
        std::string name(reinterpret_cast<const char*>(e.data.alias.anchor));
        auto it = anchors.find(name);
        if (it == anchors.end()) return fail(at, absl::StrCat("alias *", name, " names no anchor defined before it"));
        const YamlNode* target = it->second;
        if (target->open_) {
          YamlMark am = target->mark_;
          return fail(at, absl::StrCat("alias *", name, " is inside the node it names (anchor &", name, " at line ",
                                       am.line + 1, ", column ", am.column + 1,
                                       "): a recursive alias has no end; refer to something outside it"));
        }
        expanded += target->weight_;
        if (expanded > limits.max_nodes) return over_budget(at);
        attach(target);
        break;
      }
      case YAML_SCALAR_EVENT: {
        if (++expanded > limits.max_nodes) return over_budget(at);
        absl::string_view v(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        if (v.size() > limits.max_scalar_bytes) {
          return too_much(at, absl::StrCat("a value of ", v.size(), " bytes is over the limit of ",
                                       limits.max_scalar_bytes, " bytes"));
        }
        std::string why;
        size_t bad = FindBadText(v, &why);
        if (bad != absl::string_view::npos) {
          return fail(at, absl::StrCat(why, " at byte ", bad, " of this value; only UTF-8 text with tabs and "
                                       "newlines is accepted"));
        }
        YamlNode* y = out->NewNode();
        y->mark_ = at;
        if (IsNullScalar(e)) {
          y->kind_ = YamlNode::Kind::kNull;
        } else {
          y->kind_ = YamlNode::Kind::kScalar;
          y->scalar_.assign(v.data(), v.size());
        }
        anchor(e.data.scalar.anchor, y);
        attach(y);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        if (static_cast<int>(stack.size()) >= limits.max_depth) {
          return too_much(at, absl::StrCat("nested more than ", limits.max_depth, " levels deep"));
        }
        if (++expanded > limits.max_nodes) return over_budget(at);
        YamlNode* y = out->NewNode();
        y->mark_ = at;
        y->open_ = true;
        bool seq = e.type == YAML_SEQUENCE_START_EVENT;
        y->kind_ = seq ? YamlNode::Kind::kSequence : YamlNode::Kind::kMap;
        anchor(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor, y);
        stack.push_back(y);
        pending_key.push_back(nullptr);
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        YamlNode* y = stack.back();
        stack.pop_back();
        pending_key.pop_back();
        y->open_ = false;
        attach(y);
        break;
      }
      default:
        break;
    }
  }
done:
  if (out->root_ == nullptr) {
    out->root_ = out->NewNode();
  }
  return out;
}

}  // namespace mariposa
