// Helpers shared by tritonsim's API files: timestamps, query parameters and
// the validation errors every Triton API answers with.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_SIM_UTIL_H_
#define MARIPOSA_DEPLOY_TRITONSIM_SIM_UTIL_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "deploy/tritonsim/datacenter.h"

namespace tritonsim {

// ms since the epoch as "2026-11-22T12:00:00.123Z".
std::string Iso(int64_t ms);
// "2026-11-22T12:00:00.123Z" -> ms since the epoch; 0 when unreadable.
int64_t ParseIsoMs(const std::string& s);
// The first value of `key`, or null.
const std::string* Get(const Params& q, const std::string& key);
bool IsUuid(const std::string& s);
bool ParseInt(const std::string& s, int64_t* out);
// Non-empty pieces of `s` between `sep`s.
std::vector<std::string> Split(const std::string& s, char sep);
// A 409/422 answer naming the field at fault (Triton's `errors` array).
Reply Validation(int status, const std::string& field, const std::string& code, const std::string& message);
// Unknown query parameters are rejected (VMAPI and CNAPI: 409; IMGAPI: 422).
bool CheckParams(const Params& q, const std::set<std::string>& allowed, bool tags, int status, Reply* r);

// VMAPI filters: the scalar view of a VM field for filters, predicates,
// sorting and markers; a comparison of two values; a predicate
// ({"eq": [field, value]}, ne, le, ge, and, or).
json Field(const json& vm, const std::string& name);
bool Compare(const json& a, const json& b, int* out);
bool EvalPredicate(const json& p, const json& vm, std::string* err);

// IPv4 addresses as numbers: "10.0.0.1" <-> 0x0a000001; a prefix's netmask.
std::string Dotted(uint32_t a);
bool ParseDotted(const std::string& s, uint32_t* out);
uint32_t Mask(uint32_t prefix);

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_SIM_UTIL_H_
