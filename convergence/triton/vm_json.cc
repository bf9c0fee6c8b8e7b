#include "convergence/triton/vm_json.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"

namespace mariposa::triton {
namespace {

using json = nlohmann::json;

}  // namespace

int64_t SaturatingInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t SaturatingInt64(uint64_t v) {
  return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                          : static_cast<int64_t>(v);
}

namespace {

// SAX events of an array of VM objects (or of one object) into Vm records.
// Depths: 1 the page array, 2 a VM object, 3 a field's object or array,
// 4 an element of nics/disks. Values deeper than a field needs are skipped,
// except map values (tags, metadata) that are objects or arrays: those are
// built as a small tree and kept as text.
class VmSax {
 public:
  VmSax(std::vector<Vm>* out, bool one) : out_(out), one_(one) {}

  bool null() { return Scalar("null", nullptr); }
  bool boolean(bool b) { return Scalar(b ? "true" : "false", nullptr, b); }
  bool number_integer(json::number_integer_t v) {
    if (capture_) return capture_->number_integer(v) && Captured();
    return Scalar(json(v).dump(), nullptr, std::nullopt, v);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (capture_) return capture_->number_unsigned(v) && Captured();
    return Scalar(json(v).dump(), nullptr, std::nullopt, SaturatingInt64(v));
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (capture_) return capture_->number_float(v, text) && Captured();
    return Scalar(json(v).dump(), nullptr, std::nullopt, SaturatingInt64(v));
  }
  bool string(std::string& s) {
    if (capture_) return capture_->string(s) && Captured();
    return Scalar(s, &s);
  }
  bool binary(json::binary_t&) { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t n) {
    if (capture_) return capture_->start_object(n) && Deeper();
    ++depth_;
    if (depth_ == 1 && !one_) return Fail("answer is not an array");
    if (depth_ == (one_ ? 1 : 2)) {
      out_->emplace_back();
      vm_ = &out_->back();
      ++count_;
      return true;
    }
    if (Field() && Depth(3)) {
      map_ = MapOf(field_);
      return true;
    }
    if (Field() && Depth(4) && field_ == "nics" && list_ok_) {
      vm_->nics.emplace_back();
      return true;
    }
    if (Depth(4) && map_ != nullptr) return Capture(/*array=*/false, n);
    return true;  // skipped
  }
  bool end_object() {
    if (capture_) return capture_->end_object() && Shallower();
    if (Depth(3)) map_ = nullptr;
    if (Depth(4) && field_ == "disks") ++disk_;
    if (depth_ == (one_ ? 1 : 2)) vm_ = nullptr;
    --depth_;
    return true;
  }
  bool start_array(std::size_t n) {
    if (capture_) return capture_->start_array(n) && Deeper();
    ++depth_;
    if (depth_ == 1) {
      if (one_) return Fail("answer is not an object");
      return true;
    }
    if (depth_ == 2 && !one_) return Fail("answer is not an array of objects");
    if (Field() && Depth(3)) {
      list_ok_ = field_ == "nics" || field_ == "disks";
      disk_ = 0;
      return true;
    }
    if (Depth(4) && map_ != nullptr) return Capture(/*array=*/true, n);
    return true;
  }
  bool end_array() {
    if (capture_) return capture_->end_array() && Shallower();
    if (Depth(3)) list_ok_ = false;
    --depth_;
    return true;
  }
  bool key(std::string& k) {
    if (capture_) return capture_->key(k);
    if (depth_ == (one_ ? 1 : 2)) field_ = k;
    else if (Depth(3) || Depth(4)) key_ = k;
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception& e) {
    return Fail(absl::StrCat("answer is not JSON (at byte ", at, "): ", e.what()));
  }

  size_t count() const { return count_; }
  const std::string& error() const { return error_; }

 private:
  // Depth relative to the VM object: 3 = inside one of its fields.
  bool Depth(int d) const { return depth_ == d - (one_ ? 1 : 0); }
  bool Field() const { return vm_ != nullptr; }
  std::map<std::string, std::string>* MapOf(const std::string& f) {
    if (f == "tags") return &vm_->tags;
    if (f == "customer_metadata") return &vm_->customer_metadata;
    if (f == "internal_metadata") return &vm_->internal_metadata;
    return nullptr;
  }
  // A scalar value: `text` is how a map keeps it, `str` the string itself
  // (nullptr: not a string), `flag`/`num` a boolean's or number's value.
  bool Scalar(const std::string& text, std::string* str, std::optional<bool> flag = std::nullopt,
              std::optional<int64_t> num = std::nullopt) {
    if (capture_) {  // numbers and strings are forwarded by their own events
      if (flag) return capture_->boolean(*flag) && Captured();
      return capture_->null() && Captured();
    }
    if (vm_ == nullptr && depth_ == 0) return Fail(one_ ? "answer is not an object" : "answer is not an array");
    if (vm_ == nullptr && depth_ == 1 && !one_) return Fail("answer is not an array of objects");
    if (vm_ == nullptr) return true;
    if (Depth(3)) {
      if (map_ != nullptr) (*map_)[key_] = str != nullptr ? std::move(*str) : text;
      else if (field_ == "datasets" && str != nullptr) vm_->datasets.push_back(std::move(*str));
      return true;
    }
    if (Depth(4)) {
      if (field_ == "nics" && list_ok_ && !vm_->nics.empty()) {
        Nic& n = vm_->nics.back();
        if (key_ == "ip" && str) n.ip = std::move(*str);
        else if (key_ == "mac" && str) n.mac = std::move(*str);
        else if (key_ == "network_uuid" && str) n.network_uuid = std::move(*str);
        else if (key_ == "interface" && str) n.interface = std::move(*str);
        else if (key_ == "primary" && flag) n.primary = *flag;
      } else if (field_ == "disks" && list_ok_ && disk_ == 0 && key_ == "image_uuid" && str &&
                 vm_->image_uuid.empty()) {
        vm_->image_uuid = std::move(*str);
      }
      return true;
    }
    if (depth_ != (one_ ? 1 : 2)) return true;
    // A field of the VM: strings as they are, other scalars as JSON text
    // (null reads as "").
    std::string value = str != nullptr ? std::move(*str) : (text == "null" ? std::string() : text);
    const std::string& f = field_;
    if (f == "uuid") vm_->uuid = std::move(value);
    else if (f == "alias") vm_->alias = std::move(value);
    else if (f == "owner_uuid") vm_->owner_uuid = std::move(value);
    else if (f == "brand") vm_->brand = std::move(value);
    else if (f == "billing_id") vm_->billing_id = std::move(value);
    else if (f == "server_uuid") vm_->server_uuid = std::move(value);
    else if (f == "state") vm_->state = std::move(value);
    else if (f == "image_uuid") { if (!value.empty()) vm_->image_uuid = std::move(value); }
    else if (f == "create_timestamp") vm_->create_timestamp = std::move(value);
    else if (f == "last_modified") vm_->last_modified = std::move(value);
    else if (f == "ram" && num) vm_->ram = *num;
    else if (f == "quota" && num) vm_->quota = *num;
    else if (f == "cpu_cap" && num) vm_->cpu_cap = *num;
    else if (f == "docker" && flag) vm_->docker = *flag;
    else if (f == "firewall_enabled" && flag) vm_->firewall_enabled = *flag;
    else if (f == "exit_status" && num) vm_->exit_status = static_cast<int>(*num);
    return true;
  }
  // A map value that is an object or an array: built as a tree, kept as text.
  bool Capture(bool array, std::size_t n) {
    --depth_;  // the capture counts its own depth
    captured_ = json();
    capture_ = std::make_unique<nlohmann::detail::json_sax_dom_parser<json>>(captured_, false);
    capture_depth_ = 0;
    return (array ? capture_->start_array(n) : capture_->start_object(n)) && Deeper();
  }
  bool Deeper() {
    ++capture_depth_;
    return true;
  }
  bool Shallower() {
    --capture_depth_;
    return Captured();
  }
  bool Captured() {
    if (capture_depth_ > 0) return true;
    if (map_ != nullptr) (*map_)[key_] = captured_.dump();
    capture_.reset();
    return true;
  }
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }

  std::vector<Vm>* out_;
  bool one_;
  int depth_ = 0;
  size_t count_ = 0;
  Vm* vm_ = nullptr;
  std::string field_, key_;
  std::map<std::string, std::string>* map_ = nullptr;
  bool list_ok_ = false;
  int disk_ = 0;
  json captured_;
  std::unique_ptr<nlohmann::detail::json_sax_dom_parser<json>> capture_;
  int capture_depth_ = 0;
  std::string error_;
};

absl::Status Run(absl::string_view text, VmSax* sax) {
  bool ok = json::sax_parse(text.begin(), text.end(), sax, json::input_format_t::json, /*strict=*/true);
  if (ok && sax->error().empty()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(sax->error().empty() ? "answer is not JSON" : sax->error(), ": ",
                                          text.substr(0, 120)));
}

}  // namespace

absl::StatusOr<size_t> ParseVmPage(absl::string_view text, std::vector<Vm>* out) {
  size_t before = out->size();
  VmSax sax(out, /*one=*/false);
  absl::Status st = Run(text, &sax);
  if (!st.ok()) {
    out->resize(before);
    return st;
  }
  return sax.count();
}

absl::StatusOr<Vm> ParseVm(absl::string_view text) {
  std::vector<Vm> one;
  VmSax sax(&one, /*one=*/true);
  absl::Status st = Run(text, &sax);
  if (!st.ok()) return st;
  if (one.size() != 1) return absl::DataLossError(absl::StrCat("answer is not a VM object: ", text.substr(0, 120)));
  return std::move(one.front());
}

}  // namespace mariposa::triton
