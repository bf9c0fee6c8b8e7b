// VMAPI's filter predicates over a VM's JSON form.
#include "deploy/tritonsim/sim_util.h"

namespace tritonsim {

json Field(const json& vm, const std::string& name) {
  if (name.rfind("tags.", 0) == 0) {
    auto it = vm["tags"].find(name.substr(5));
    return it == vm["tags"].end() ? json() : *it;
  }
  auto it = vm.find(name);
  return it == vm.end() ? json() : *it;
}

bool Compare(const json& a, const json& b, int* out) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    *out = x < y ? -1 : x > y ? 1 : 0;
    return true;
  }
  std::string x = a.is_string() ? a.get<std::string>() : a.dump();
  std::string y = b.is_string() ? b.get<std::string>() : b.dump();
  *out = x.compare(y) < 0 ? -1 : x.compare(y) > 0 ? 1 : 0;
  return true;
}

bool EvalPredicate(const json& p, const json& vm, std::string* err) {
  if (!p.is_object() || p.size() != 1) {
    *err = "predicate must be an object with one operator";
    return false;
  }
  const std::string& op = p.begin().key();
  const json& arg = p.begin().value();
  if (op == "and" || op == "or") {
    if (!arg.is_array()) {
      *err = op + " takes an array";
      return false;
    }
    bool acc = op == "and";
    for (const auto& sub : arg) {
      bool v = EvalPredicate(sub, vm, err);
      if (!err->empty()) return false;
      acc = op == "and" ? acc && v : acc || v;
    }
    return acc;
  }
  if (op != "eq" && op != "ne" && op != "le" && op != "ge") {
    *err = "unknown predicate operator " + op;
    return false;
  }
  if (!arg.is_array() || arg.size() != 2 || !arg[0].is_string()) {
    *err = op + " takes [field, value]";
    return false;
  }
  json have = Field(vm, arg[0].get<std::string>());
  if (have.is_null()) return op == "ne";
  auto match_one = [&](const json& want) {
    int c = 0;
    if (want.is_string() && have.is_string()) {
      std::string w = want.get<std::string>();
      if (op == "eq" && w.find('*') != std::string::npos) {
        std::string prefix = w.substr(0, w.find('*'));
        return have.get<std::string>().rfind(prefix, 0) == 0;
      }
    }
    Compare(have, want, &c);
    if (op == "eq") return c == 0;
    if (op == "ne") return c != 0;
    if (op == "le") return c <= 0;
    return c >= 0;
  };
  if (have.is_array()) {  // e.g. nics: match any element
    for (const auto& e : have) {
      json saved = have;
      have = e;
      if (match_one(arg[1])) return true;
      have = saved;
    }
    return false;
  }
  return match_one(arg[1]);
}


}  // namespace tritonsim
