// --listen-vms: every running VM answers on its own loopback address — its
// primary nic's 10.a.b.c becomes 127.a.b.c — on the ports named by its `ports`
// tag or customer_metadata (a number, "80,443" or a list). Each connection is
// answered as HTTP, by the VM's health as set through the control API:
// healthy 200, unhealthy 503, refuse (the ports are closed), hang (accepted,
// never answered). One epoll thread; bounded buffers. Thread-safe.
#ifndef MARIPOSA_DEPLOY_TRITONSIM_VM_LISTENERS_H_
#define MARIPOSA_DEPLOY_TRITONSIM_VM_LISTENERS_H_

#include <atomic>
#include <string>
#include <thread>

#include "deploy/tritonsim/datacenter.h"

namespace tritonsim {

// A NIC address a.b.c.d -> its loopback twin 127.b.c.d ("" when unreadable).
std::string LoopbackFor(const std::string& nic_ip);

class VmListeners {
 public:
  // `dc` must outlive this object. Starts the loop thread.
  explicit VmListeners(DataCenter* dc);
  ~VmListeners();
  // How many (address, port) listeners are open now.
  int open_count() const { return open_.load(); }

 private:
  void Loop();
  DataCenter* dc_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::thread thread_;
};

}  // namespace tritonsim

#endif  // MARIPOSA_DEPLOY_TRITONSIM_VM_LISTENERS_H_
