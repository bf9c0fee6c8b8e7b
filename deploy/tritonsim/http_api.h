// Routes VMAPI, CNAPI, IMGAPI and tritonsim's control API onto one
// httplib::Server (their paths do not collide, so one base URL serves all
// three clients).
#ifndef MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_
#define MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_

#include <atomic>

#include "deploy/tritonsim/datacenter.h"

namespace httplib {
class Server;
}

namespace tritonsim {

// Installs every route. `api_latency_ms` is read on each request (it can be
// changed through the control API while serving).
void InstallRoutes(httplib::Server* server, DataCenter* dc, std::atomic<int>* api_latency_ms);

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_HTTP_API_H_
