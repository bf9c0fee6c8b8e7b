#include "projects/yaml_document.h"

#include <algorithm>

#include <yaml.h>

#include "absl/status/status.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
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

// The tree of one document, event by event, within the limits: each open
// map and sequence, the key awaiting its value, the anchors, and the nodes
// counted with aliases expanded. A failure sets the error mark.
class YamlDocument::Builder {
 public:
  Builder(YamlDocument* out, const YamlLimits& limits, YamlMark* error_mark)
      : out_(out), limits_(limits), error_mark_(error_mark) {}

  absl::Status Fail(YamlMark at, std::string msg) {  // syntax: INVALID_ARGUMENT
    *error_mark_ = at;
    return absl::InvalidArgumentError(std::move(msg));
  }
  absl::Status TooMuch(YamlMark at, std::string msg) {  // a limit: RESOURCE_EXHAUSTED
    *error_mark_ = at;
    return absl::ResourceExhaustedError(std::move(msg));
  }

  absl::Status Alias(const yaml_event_t& e, YamlMark at) {
    std::string name(reinterpret_cast<const char*>(e.data.alias.anchor));
    auto it = anchors_.find(name);
    if (it == anchors_.end()) return Fail(at, absl::StrCat("alias *", name, " names no anchor defined before it"));
    const YamlNode* target = it->second;
    if (target->open_) {
      YamlMark am = target->mark_;
      return Fail(at, absl::StrCat("alias *", name, " is inside the node it names (anchor &", name, " at line ",
                                   am.line + 1, ", column ", am.column + 1,
                                   "): a recursive alias has no end; refer to something outside it"));
    }
    expanded_ += target->weight_;
    if (expanded_ > limits_.max_nodes) return OverBudget(at);
    Attach(target);
    return absl::OkStatus();
  }

  absl::Status Scalar(const yaml_event_t& e, YamlMark at) {
    if (++expanded_ > limits_.max_nodes) return OverBudget(at);
    absl::string_view v(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
    if (v.size() > limits_.max_scalar_bytes) {
      return TooMuch(at, absl::StrCat("a value of ", v.size(), " bytes is over the limit of ", limits_.max_scalar_bytes,
                                      " bytes"));
    }
    std::string why;
    size_t bad = FindBadText(v, &why);
    if (bad != absl::string_view::npos) {
      return Fail(at, absl::StrCat(why, " at byte ", bad, " of this value; only UTF-8 text with tabs and "
                                   "newlines is accepted"));
    }
    YamlNode* y = out_->NewNode();
    y->mark_ = at;
    // A value left empty has no text of its own: libyaml marks it where the
    // next token is, which may be lines below (after comments) or past the
    // last line. It is where its key is.
    if (v.empty() && e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !stack_.empty() &&
        stack_.back()->kind_ == YamlNode::Kind::kMap && pending_key_.back() != nullptr) {
      y->mark_ = pending_key_.back()->mark_;
    }
    if (IsNullScalar(e)) {
      y->kind_ = YamlNode::Kind::kNull;
    } else {
      y->kind_ = YamlNode::Kind::kScalar;
      y->scalar_.assign(v.data(), v.size());
    }
    Anchor(e.data.scalar.anchor, y);
    Attach(y);
    return absl::OkStatus();
  }

  absl::Status Open(const yaml_event_t& e, YamlMark at) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return TooMuch(at, absl::StrCat("nested more than ", limits_.max_depth, " levels deep"));
    }
    if (++expanded_ > limits_.max_nodes) return OverBudget(at);
    YamlNode* y = out_->NewNode();
    y->mark_ = at;
    y->open_ = true;
    bool seq = e.type == YAML_SEQUENCE_START_EVENT;
    y->kind_ = seq ? YamlNode::Kind::kSequence : YamlNode::Kind::kMap;
    Anchor(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor, y);
    stack_.push_back(y);
    pending_key_.push_back(nullptr);
    return absl::OkStatus();
  }

  void Close() {
    YamlNode* y = stack_.back();
    stack_.pop_back();
    pending_key_.pop_back();
    y->open_ = false;
    Attach(y);
  }

 private:
  // Hangs a finished node (or an alias target) under the innermost open node.
  void Attach(const YamlNode* child) {
    if (stack_.empty()) {
      out_->root_ = child;
      return;
    }
    YamlNode* parent = stack_.back();
    if (parent->kind_ == YamlNode::Kind::kSequence) {
      parent->items_.push_back(child);
    } else if (pending_key_.back() == nullptr) {
      pending_key_.back() = child;
    } else {
      parent->pairs_.push_back(YamlPair{*pending_key_.back(), *child});
      pending_key_.back() = nullptr;
    }
    parent->weight_ += child->weight_;
  }
  void Anchor(const unsigned char* name, YamlNode* node) {
    if (name != nullptr) anchors_[reinterpret_cast<const char*>(name)] = node;
  }
  absl::Status OverBudget(YamlMark at) {
    return TooMuch(at, absl::StrCat("the document expands to more than ", limits_.max_nodes,
                                    " nodes (aliases count once per use); make it smaller or use fewer aliases"));
  }

  YamlDocument* out_;
  const YamlLimits& limits_;
  YamlMark* error_mark_;
  std::vector<YamlNode*> stack_;              // open maps and sequences
  std::vector<const YamlNode*> pending_key_;  // per open map: its key awaiting a value
  absl::flat_hash_map<std::string, YamlNode*> anchors_;
  int64_t expanded_ = 0;  // nodes of the document with aliases expanded
};

absl::StatusOr<std::unique_ptr<YamlDocument>> YamlDocument::Parse(absl::string_view text, YamlMark* error_mark,
                                                                   const YamlLimits& limits,
                                                                   const Cancellation* cancel) {
  YamlMark unused;
  if (error_mark == nullptr) error_mark = &unused;
  auto out = std::unique_ptr<YamlDocument>(new YamlDocument());
  Builder b(out.get(), limits, error_mark);
  if (text.size() > limits.max_bytes) {
    return b.TooMuch(YamlMark{}, absl::StrCat("the text is ", text.size(), " bytes, over the limit of ",
                                              limits.max_bytes, " bytes; split the project or shorten its values"));
  }
  EventReader reader(text);
  if (!reader.initialized()) return absl::ResourceExhaustedError("cannot initialize the YAML parser");
  int64_t events = 0;
  for (bool end = false; !end;) {
    if (!reader.Next()) {
      YamlMark at;
      std::string msg = reader.Problem(&at);
      return b.Fail(at, absl::StrCat("not valid YAML or JSON: ", msg));
    }
    const yaml_event_t& e = reader.event();
    YamlMark at = MarkOf(e.start_mark);
    if (cancel != nullptr && (++events & 4095) == 0) RETURN_IF_ERROR(cancel->Check());
    absl::Status s;
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
      case YAML_DOCUMENT_END_EVENT:  // only the first document counts
        end = true;
        break;
      case YAML_ALIAS_EVENT:
        s = b.Alias(e, at);
        break;
      case YAML_SCALAR_EVENT:
        s = b.Scalar(e, at);
        break;
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        s = b.Open(e, at);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        b.Close();
        break;
      default:
        break;
    }
    if (!s.ok()) return s;
  }
  if (out->root_ == nullptr) out->root_ = out->NewNode();
  return out;
}

}  // namespace mariposa
