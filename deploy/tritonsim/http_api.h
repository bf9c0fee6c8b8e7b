// Routes VMAPI, CNAPI, IMGAPI, PAPI, NAPI, the workflow API's jobs and
// tritonsim's control API onto one httplib::Server (their paths do not
// collide, so one base URL serves every client), or one API's onto a server
// of its own (--api-ports: each port answers only its API's routes).
#ifndef MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_
#define MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_

#include <atomic>
#include <string>

#include "deploy/tritonsim/datacenter.h"

namespace httplib {
class Server;
}

namespace tritonsim {

// Installs the routes of `api` ("vmapi", "cnapi", "imgapi" with the updates
// source, "papi", "napi", "wfapi": workflow jobs), each with /ping; "" =
// every API and the control API on one server. `api_latency_ms` is read on
// each request (it can be changed through the control API while serving).
void InstallRoutes(httplib::Server* server, DataCenter* dc, std::atomic<int>* api_latency_ms,
                   const std::string& api = "");

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_
