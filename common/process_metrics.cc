#include "common/process_metrics.h"

#include <dirent.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace mariposa {
namespace {

prometheus::MetricFamily One(const std::string& name, const std::string& help, prometheus::MetricType type,
                             double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

// The fields of /proc/self/stat after the command (which may hold spaces).
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> out;
  size_t close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream rest(line.substr(close + 2));
  for (std::string f; rest >> f;) out.push_back(f);
  return out;
}

double BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = 0;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

int OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own fd
}

class Process : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using T = prometheus::MetricType;
    std::vector<prometheus::MetricFamily> out;
    std::vector<std::string> f = StatFields();
    // Fields after ") ": state=0 … utime=11 stime=12 … num_threads=17
    // starttime=19 vsize=20 rss=21 (proc(5), counted from state).
    if (f.size() > 21) {
      const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
      const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
      out.push_back(One("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", T::Counter,
                        (std::stod(f[11]) + std::stod(f[12])) / tick));
      out.push_back(One("process_threads", "Number of OS threads in the process.", T::Gauge, std::stod(f[17])));
      out.push_back(One("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                        T::Gauge, BootTime() + std::stod(f[19]) / tick));
      out.push_back(One("process_virtual_memory_bytes", "Virtual memory size in bytes.", T::Gauge, std::stod(f[20])));
      out.push_back(
          One("process_resident_memory_bytes", "Resident memory size in bytes.", T::Gauge, std::stod(f[21]) * page));
    }
    out.push_back(One("process_open_fds", "Number of open file descriptors.", T::Gauge, OpenFds()));
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
      out.push_back(One("process_max_fds", "Maximum number of open file descriptors.", T::Gauge,
                        static_cast<double>(lim.rlim_cur)));
    }
    return out;
  }
};

class BuildInfo : public prometheus::Collectable {
 public:
  explicit BuildInfo(std::vector<prometheus::ClientMetric::Label> labels) : labels_(std::move(labels)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    return {One("mariposa_build_info", "1, labelled with the binary, its version and its libraries' versions.",
                prometheus::MetricType::Gauge, 1, labels_)};
  }

 private:
  std::vector<prometheus::ClientMetric::Label> labels_;
};

class Samples : public prometheus::Collectable {
 public:
  explicit Samples(std::function<std::vector<Sample>()> read) : read_(std::move(read)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    for (Sample& s : read_()) {
      using T = prometheus::MetricType;
      std::vector<prometheus::ClientMetric::Label> labels;
      for (auto& [k, v] : s.labels) labels.push_back({k, v});
      prometheus::MetricFamily one = One(s.name, s.help, s.counter ? T::Counter : T::Gauge, s.value, labels);
      auto same = std::find_if(out.begin(), out.end(), [&](const auto& f) { return f.name == s.name; });
      if (same == out.end()) out.push_back(std::move(one));
      else same->metric.push_back(std::move(one.metric[0]));
    }
    return out;
  }

 private:
  std::function<std::vector<Sample>()> read_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> SampleCollector(std::function<std::vector<Sample>()> read) {
  return std::make_shared<Samples>(std::move(read));
}

std::shared_ptr<prometheus::Collectable> ProcessCollector() { return std::make_shared<Process>(); }

std::shared_ptr<prometheus::Collectable> BuildInfoCollector(const std::string& binary,
                                                            std::map<std::string, std::string> labels) {
  labels["binary"] = binary;
  labels["version"] = kMariposaVersion;
  std::vector<prometheus::ClientMetric::Label> out;
  for (auto& [k, v] : labels) out.push_back({k, v});  // sorted by name, as Prometheus wants
  return std::make_shared<BuildInfo>(std::move(out));
}

}  // namespace mariposa
