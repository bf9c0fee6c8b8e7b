// A project's volumes (the manifest's `volumes:`): RFD 26 NFS shared volumes
// made through VOLAPI for the project's account, mounted by its services
// (`volumes: [{name, mountpoint, mode}]` on a service, as CloudAPI and
// sdc-docker pass them to VMAPI). Data loss is always explicit: a volume is
// deleted only when its entry says `remove: true`, or when the project is
// deleted and its `deletion_policy` is `delete`. Pure; no I/O.
#ifndef MARIPOSA_PROJECTS_VOLUMES_H_
#define MARIPOSA_PROJECTS_VOLUMES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mariposa {

struct VolumeSpec {
  int64_t size_mib = 0;  // 0: VOLAPI's default (10 GiB)
  // The fabric network it is served on: a network of the manifest's fabric
  // (by its name) or an existing fabric network's uuid. Left out: the
  // fabric's one network when the manifest has a fabric of one network,
  // otherwise "" (the account's default fabric network, found in NAPI as
  // CloudAPI does: convergence/decide/catalog.h DefaultFabricNetwork).
  std::string network;
  std::string deletion_policy = "retain";  // retain | delete: what deleting the project does to it
  bool remove = false;  // delete it from VOLAPI once no instance mounts it (its data is lost)
};

// A service's mount of one of the project's volumes.
struct VolumeMount {
  std::string volume;      // the manifest's name
  std::string mountpoint;  // absolute
  std::string mode = "rw";  // rw | ro
  bool operator==(const VolumeMount& o) const {
    return volume == o.volume && mountpoint == o.mountpoint && mode == o.mode;
  }
};

// VOLAPI's name of a volume: unique in the account, so the project's name
// comes first, joined by a dot ("jupiter.data"). Project and volume names
// are DNS labels (no dots), so the name says whose volume it is.
std::string VolapiVolumeName(const std::string& project, const std::string& volume);
// The manifest's name of VOLAPI volume `volapi_name` when it is one of
// `project`'s (VolapiVolumeName), else nullopt.
std::optional<std::string> ProjectVolumeName(const std::string& project, const std::string& volapi_name);

// "NAME:MOUNTPOINT[:ro|:rw]", docker's short form of a mount; nullopt (and
// `why`) when it is not one.
std::optional<VolumeMount> ParseVolumeMount(const std::string& text, std::string* why);

// What an apply may not change of a volume both versions have (VOLAPI
// neither resizes a volume nor moves it to another network): "" when
// nothing, else the error, naming the field and the fix.
std::string FixedVolumeChange(const std::map<std::string, VolumeSpec>& before,
                              const std::map<std::string, VolumeSpec>& after);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_VOLUMES_H_
