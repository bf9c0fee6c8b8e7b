// How a command prints: tables for people (colored on a terminal), JSON or
// YAML for programs (-o json|yaml), on the stream it was given (std::cout in
// the binary, a string in tests).
#ifndef MARIPOSA_CLI_OUTPUT_H_
#define MARIPOSA_CLI_OUTPUT_H_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace google::protobuf {
class Message;
}

namespace mariposa::cli {

class Output {
 public:
  // `format`: table, json or yaml.
  Output(std::ostream& out, std::string format) : out_(out), format_(std::move(format)) {}

  std::ostream& out() { return out_; }
  bool Structured() const { return format_ == "json" || format_ == "yaml"; }
  // A message as -o asks (JSON with proto field names, or YAML).
  void Print(const google::protobuf::Message& m);
  void PrintJson(const std::string& json);
  // Rows of named text fields, as a JSON or YAML list.
  using Record = std::vector<std::pair<std::string, std::string>>;
  void PrintRecords(const std::vector<Record>& records);
  // Aligned columns; verdict and state words painted on a terminal.
  void Table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

 private:
  std::ostream& out_;
  std::string format_;
};

}  // namespace mariposa::cli

#endif  // MARIPOSA_CLI_OUTPUT_H_
