#include "convergence/triton/http.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace mariposa::triton {
namespace {

constexpr absl::string_view kHttpCodePayload = "http.code";

struct BodySink {
  CURL* handle;
  std::string* body;
};

// Sized once from Content-Length: a ListVms page is about 1 MB, and growing
// it by doubling costs copies and large, short-lived allocations.
size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  if (sink->body->empty()) {
    curl_off_t length = -1;
    if (curl_easy_getinfo(sink->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0 &&
        length < (curl_off_t{1} << 30)) {
      sink->body->reserve(static_cast<size_t>(length));
    }
  }
  sink->body->append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string key = absl::AsciiStrToLower(line.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    (*static_cast<std::map<std::string, std::string>*>(user))[key] = value;
  }
  return size * n;
}

absl::StatusCode CodeFor(int http, const std::string& triton_code) {
  if (http == 404) return absl::StatusCode::kNotFound;
  if (http == 409) {
    return triton_code == "ImageUuidAlreadyExists" ? absl::StatusCode::kAlreadyExists
                                                   : absl::StatusCode::kFailedPrecondition;
  }
  if (http == 400 || http == 422) return absl::StatusCode::kInvalidArgument;
  if (http == 401 || http == 403) return absl::StatusCode::kPermissionDenied;
  if (http == 429 || http >= 500) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

struct CurlInit {
  CurlInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

std::string TritonCode(const absl::Status& s) {
  auto p = s.GetPayload(kTritonCodePayload);
  return p ? std::string(*p) : "";
}

int HttpCode(const absl::Status& s) {
  auto p = s.GetPayload(kHttpCodePayload);
  int code = 0;
  if (p) absl::SimpleAtoi(std::string(*p), &code);
  return code;
}

std::string UrlEncode(absl::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

HttpClient::HttpClient(std::string api, HttpOptions options, const Clock* clock, MetricsHook hook)
    : api_(std::move(api)), options_(std::move(options)), clock_(clock), hook_(std::move(hook)) {
  static CurlInit init;
}

HttpClient::~HttpClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::TakeHandle() {
  {
    std::unique_lock<std::mutex> l(mu_);
    // A request waits for a connection while max_connections are in use.
    freed_.wait(l, [this] { return options_.max_connections <= 0 || in_use_ < options_.max_connections; });
    ++in_use_;
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::ReturnHandle(void* h) {
  {
    std::lock_guard<std::mutex> l(mu_);
    idle_.push_back(h);
    --in_use_;
  }
  freed_.notify_one();
}

absl::StatusOr<HttpResponse> HttpClient::Call(absl::string_view op, absl::string_view method, absl::string_view path,
                                              absl::string_view body) {
  return CallAt(options_.base_url, op, method, path, body);
}

absl::StatusOr<HttpResponse> HttpClient::CallAt(absl::string_view base_url, absl::string_view op,
                                                absl::string_view method, absl::string_view path,
                                                absl::string_view body) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string url = absl::StrCat(base_url, path);
  absl::Status last;
  for (int attempt = 1; attempt <= std::max(1, options_.max_attempts); ++attempt) {
    CURL* h = static_cast<CURL*>(TakeHandle());
    curl_easy_reset(h);
    HttpResponse resp;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
    if (method == "HEAD") curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    std::string payload(body);
    struct curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    // No "Expect: 100-continue" (libcurl adds it to bodies over 1 KiB and
    // then waits up to a second for a server that may never answer it).
    headers = curl_slist_append(headers, "Expect:");
    if (!payload.empty() || method == "POST" || method == "PUT") {
      headers = curl_slist_append(headers, "Content-Type: application/json");
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(options_.timeout)));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
    BodySink sink{h, &resp.body};
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, WriteHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &resp.headers);
    absl::Time start = clock_->Now();
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    ReturnHandle(h);
    resp.status = rc == CURLE_OK ? static_cast<int>(code) : 0;
    if (hook_) hook_(RequestRecord{api_, std::string(op), resp.status, clock_->Now() - start, attempt});

    bool retry = false;
    if (rc != CURLE_OK) {
      absl::StatusCode sc = rc == CURLE_OPERATION_TIMEDOUT ? absl::StatusCode::kDeadlineExceeded
                                                           : absl::StatusCode::kUnavailable;
      last = absl::Status(sc, absl::StrCat(api_, " ", op, ": ", method, " ", url, ": ", curl_easy_strerror(rc)));
      // A timed-out request may have been acted on; only connection
      // failures before anything was sent are safe to repeat blindly.
      retry = rc == CURLE_COULDNT_CONNECT || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR ||
              rc == CURLE_GOT_NOTHING || (rc == CURLE_OPERATION_TIMEDOUT && method == "GET");
    } else if (resp.status >= 200 && resp.status < 300) {
      return resp;
    } else {
      std::string tcode, tmsg;
      auto j = nlohmann::json::parse(resp.body, nullptr, false);
      if (j.is_object()) {
        tcode = j.value("code", "");
        tmsg = j.value("message", "");
        if (j.contains("errors") && j["errors"].is_array()) {
          std::string details;
          for (const auto& e : j["errors"]) {
            if (!details.empty()) details += "; ";
            details += absl::StrCat(e.value("field", ""), ": ", e.value("message", e.value("code", "")));
          }
          if (!details.empty()) tmsg = absl::StrCat(tmsg, " (", details, ")");
        }
      }
      bool duplicate = resp.body.find("\"Duplicate\"") != std::string::npos;
      absl::StatusCode sc = duplicate ? absl::StatusCode::kAlreadyExists : CodeFor(resp.status, tcode);
      last = absl::Status(sc, absl::StrCat(api_, " ", op, ": ", resp.status, " ", tcode.empty() ? "" : tcode + ": ",
                                           tmsg.empty() ? resp.body.substr(0, 200) : tmsg));
      if (!tcode.empty()) last.SetPayload(kTritonCodePayload, absl::Cord(tcode));
      last.SetPayload(kHttpCodePayload, absl::Cord(absl::StrCat(resp.status)));
      retry = resp.status >= 500 || resp.status == 429;
    }
    if (!retry || attempt == options_.max_attempts) break;
    // Full jitter: sleep uniformly in [0, min(cap, base * 2^attempt)).
    absl::Duration ceiling = std::min(options_.backoff_cap, options_.backoff_base * (1 << std::min(attempt, 16)));
    int64_t us = absl::ToInt64Microseconds(ceiling);
    clock_->SleepFor(absl::Microseconds(us > 0 ? std::uniform_int_distribution<int64_t>(0, us)(rng) : 0));
  }
  return last;
}

}  // namespace mariposa::triton
