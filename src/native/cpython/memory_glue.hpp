// What the allocator hooks need from the interpreter: the calling thread's stack, which
// callers are the interpreter itself, and Python's arena allocator, whose blocks come from
// mmap and so never pass through a hooked malloc.
#pragma once

#include "../shim/memory_hooks.hpp"

namespace spyglass::cpython {

// With the GIL. Wraps the arena allocator and starts the hooks; false when the hooks are
// already in use in this process.
bool start_memory_hooks(const shim::HookOptions& options);
// With the GIL. Puts the arena allocator and every patched entry back.
void stop_memory_hooks();

}  // namespace spyglass::cpython
