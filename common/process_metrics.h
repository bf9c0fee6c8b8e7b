// Prometheus collectables every Mariposa binary serves next to its own
// metrics: the standard process_* metrics of the client libraries (read
// from /proc/self at scrape time) and mariposa_build_info. prometheus-cpp is
// only forward-declared here.
#ifndef MARIPOSA_COMMON_PROCESS_METRICS_H_
#define MARIPOSA_COMMON_PROCESS_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace mariposa {

// The version every binary reports (mariposa_build_info, --version).
inline constexpr char kMariposaVersion[] = "0.1.0";

// process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_start_time_seconds,
// process_open_fds, process_max_fds, process_threads.
std::shared_ptr<prometheus::Collectable> ProcessCollector();

// mariposa_build_info{binary, version, grpc, sqlite, …} 1: `labels` are
// added to binary and version.
std::shared_ptr<prometheus::Collectable> BuildInfoCollector(const std::string& binary,
                                                            std::map<std::string, std::string> labels = {});

// One sample of a metric read at scrape time. Samples with the same name
// form one family (its help and counter-ness taken from the first).
struct Sample {
  std::string name;
  std::string help;
  double value = 0;
  std::map<std::string, std::string> labels;
  bool counter = false;
};
// Serves what `read` returns at each scrape.
std::shared_ptr<prometheus::Collectable> SampleCollector(std::function<std::vector<Sample>()> read);

}  // namespace mariposa

#endif  // MARIPOSA_COMMON_PROCESS_METRICS_H_
