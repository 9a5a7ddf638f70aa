// Redirecting calls to C library functions (malloc, memcpy, ...) in a running process by
// rewriting the entries of every loaded object's global offset table, as memray does.
// Unlike LD_PRELOAD this needs no restart, so memory profiling can start from the API or a
// notebook; and it is undone entry by entry at stop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace spyglass::platform {

struct Redirect {
  const char* symbol;  // undefined symbol to redirect, e.g. "malloc"
  void* replacement;
};

class GotPatcher {
 public:
  // `self` is any address inside the object that holds the replacements: that object is
  // never patched, so its own calls reach the real functions.
  GotPatcher(std::vector<Redirect> redirects, const void* self);

  // Patches every loaded object not patched yet. Returns the number of entries rewritten.
  size_t patch_new_objects();
  // True when objects were loaded or unloaded since the last patch (cheap to ask).
  bool objects_changed() const;
  // Puts back the original entries in every object still loaded.
  void restore();
  // In a forked child: the lock may be held by a thread that does not exist there.
  void reinit_after_fork();

  struct Slot {
    void** address;
    void* original;
    void* replacement;
  };
  struct Object {
    uintptr_t base;
    std::string name;
    std::vector<Slot> slots;
  };

 private:
  bool is_patched(uintptr_t base, const char* name) const;

  std::vector<Redirect> redirects_;
  uintptr_t self_base_ = 0;
  std::mutex mutex_;
  std::vector<Object> patched_;
  unsigned long long adds_seen_ = 0;
  unsigned long long subs_seen_ = 0;
};

}  // namespace spyglass::platform
