// Copy volume between the host and NVIDIA GPUs, with no CUDA dependency at build time.
// Once a CUDA runtime (libcudart*) or driver (libcuda.so*) is among the loaded objects,
// its copy entry points are redirected in every object that calls them through its global
// offset table, with the patcher the allocator hooks use; each redirect counts the bytes
// and their direction on the calling thread (record_cuda_copy), then calls the library.
// With no CUDA library loaded nothing is looked up, loaded or patched. A runtime linked
// statically into an extension has no table entry to redirect: its copies are not seen.
#pragma once

namespace spyglass::shim::cuda {

// Looks for CUDA libraries loaded since, and patches the objects loaded since (the
// allocator hooks call it at start and whenever objects were loaded). Cheap when nothing
// changed.
void refresh();
// Puts every redirected entry back (at stop); refresh() patches them again.
void restore();

void before_fork();
void after_fork_parent();
void after_fork_child();

}  // namespace spyglass::shim::cuda
