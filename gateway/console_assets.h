// The web console's files, built into mariposad (gateway/embed.py writes
// the data from console/).
#ifndef MARIPOSA_GATEWAY_CONSOLE_ASSETS_H_
#define MARIPOSA_GATEWAY_CONSOLE_ASSETS_H_

#include <cstddef>
#include <string>

namespace mariposa::gateway {

struct Asset {
  const char* path;  // "/console/app.js"
  const char* type;  // its Content-Type
  const unsigned char* data;
  size_t size;
};

// nullptr when the console has no such file.
const Asset* FindAsset(const std::string& path);

}  // namespace mariposa::gateway

#endif  // MARIPOSA_GATEWAY_CONSOLE_ASSETS_H_
