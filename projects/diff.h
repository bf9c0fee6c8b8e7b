// Goal-state diff between two manifests (the version in force and a
// candidate), as the API's Diff message. Pure; thread-safe.
#ifndef MARIPOSA_PROJECTS_DIFF_H_
#define MARIPOSA_PROJECTS_DIFF_H_

#include "mariposa/v1/projects.pb.h"
#include "projects/manifest.h"

namespace mariposa {

// `before` is null for a project's first version. `empty` is set when the
// canonical hashes are equal. `per_datacenter`: also each data center's plan
// when `after` lists data centers (two compiles each); false where nobody
// reads them (a version another data center's rollout sends here).
// `after_tree`: the tree Compile gave for `after`, when the caller kept it
// (its services' trees are then not built again).
v1::Diff DiffManifests(const CompiledManifest* before, const CompiledManifest& after, bool per_datacenter = true,
                       const Value* after_tree = nullptr);

}  // namespace mariposa

#endif  // MARIPOSA_PROJECTS_DIFF_H_
