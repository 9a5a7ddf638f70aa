// What the allocator hooks need from the interpreter: the calling thread's stack, which
// callers are the interpreter itself, and Python's object and memory allocators, wrapped
// (PyMem_SetAllocator) so that their blocks count as the Python share.
#pragma once

#include "../shim/memory_hooks.hpp"

namespace spyglass::cpython {

// With the GIL. Wraps Python's allocators and starts the hooks; false when the hooks are
// already in use in this process.
bool start_memory_hooks(const shim::HookOptions& options);
// With the GIL. Puts Python's allocators and every patched entry back.
void stop_memory_hooks();

}  // namespace spyglass::cpython
