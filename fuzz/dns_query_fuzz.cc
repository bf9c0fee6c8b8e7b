// A DNS message as tritonsim's CNS receives it on UDP (deploy/tritonsim/cns.h):
// a query it takes gives an answer that echoes its id and question and
// parses back to the same question; anything else is dropped.
#include <cstdint>
#include <string>

#include "deploy/tritonsim/cns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string message(reinterpret_cast<const char*>(data), size);
  auto q = tritonsim::ParseDnsQuery(message);
  if (!q) return 0;
  if (q->question_end > message.size() || q->name.size() > 255) __builtin_trap();
  for (int rcode : {0, 3, 5}) {
    std::string answer = tritonsim::BuildDnsAnswer(message, *q, {"10.0.0.1", "not an address"}, 30, rcode);
    if (answer.size() < q->question_end) __builtin_trap();
    if (answer.compare(0, 2, message, 0, 2) != 0) __builtin_trap();  // the id
    if (answer.compare(12, q->question_end - 12, message, 12, q->question_end - 12) != 0) __builtin_trap();
    // The answer is a response: never taken as a query.
    if (tritonsim::ParseDnsQuery(answer)) __builtin_trap();
  }
  return 0;
}
