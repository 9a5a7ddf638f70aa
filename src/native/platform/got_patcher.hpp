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

struct dl_phdr_info;  // <link.h>

namespace spyglass::platform {

struct Redirect {
  const char* symbol;  // undefined symbol to redirect, e.g. "malloc"
  void* replacement;
  // The definition the replacement itself calls. An entry already bound to anything else
  // (a library with its own allocator, loaded with RTLD_DEEPBIND; an old versioned memcpy
  // that is really memmove) is left alone: redirecting it would mix two allocators' blocks.
  // Null: redirect whatever the entry holds.
  void* expected = nullptr;
};

// dlopen as if called from `caller`: the loader searches the calling object's RPATH and
// RUNPATH for a bare name, and a hook calling dlopen on a library's behalf would otherwise
// make that our own object's.
void* dlopen_for(uintptr_t caller, const char* file, int mode);

class GotPatcher {
 public:
  // `self` is any address inside the object that holds the replacements: that object is
  // never patched, so its own calls reach the real functions. `target`, when given, is an
  // address inside the library that defines the redirected functions: its calls to its own
  // entry points are not redirected either.
  GotPatcher(std::vector<Redirect> redirects, const void* self, const void* target = nullptr);

  // Patches every loaded object not patched yet, while active. Returns the number of
  // entries rewritten.
  size_t patch_new_objects();
  void set_active(bool active);
  // True when objects were loaded or unloaded since the last patch (cheap to ask).
  bool objects_changed() const;
  // Puts back the original entries in every object still loaded, and stops patching.
  void restore();
  // Fork handlers: the lock is held across fork, so the child's copy is consistent.
  void lock_for_fork();
  void unlock_after_fork();
  void unlock_after_fork_child();

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
  bool left_alone(const dl_phdr_info* info) const;

  std::vector<Redirect> redirects_;
  const void* self_ = nullptr;
  const void* target_ = nullptr;
  bool active_ = false;
  std::mutex mutex_;
  std::vector<Object> patched_;
  unsigned long long adds_seen_ = 0;
  unsigned long long subs_seen_ = 0;
};

}  // namespace spyglass::platform
