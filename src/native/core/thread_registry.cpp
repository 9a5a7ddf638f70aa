#include "thread_registry.hpp"

#include "thread_slots.hpp"

namespace spyglass {

namespace {

uint32_t allocate_slot() {
  ThreadSlot* table = thread_slot_table();
  for (uint32_t i = 1; i < kMaxThreadSlots; ++i) {  // slot 0 unused: cookie 0 means "none"
    if (table[i].tid == 0) return i;
  }
  return 0;
}

}  // namespace

ProfiledThread* ThreadRegistry::find(pid_t tid) {
  auto it = threads_.find(tid);
  return it != threads_.end() ? &it->second : nullptr;
}

const ProfiledThread* ThreadRegistry::find(pid_t tid) const {
  auto it = threads_.find(tid);
  return it != threads_.end() ? &it->second : nullptr;
}

ProfiledThread* ThreadRegistry::add(pid_t tid) {
  const uint32_t index = allocate_slot();
  if (index == 0) return nullptr;
  ThreadSlot& slot = thread_slot_table()[index];
  slot.tid = tid;
  // Generations wrap before reaching the cookie's sign bit, and skip 0.
  slot.generation = slot.generation % ((1u << (32 - kSlotIndexBits - 1)) - 1) + 1;
  ProfiledThread& thread = threads_[tid];
  thread = ProfiledThread{};
  thread.tid = tid;
  thread.slot = index;
  return &thread;
}

void ThreadRegistry::remove(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  thread_slot_table()[it->second.slot].tid = 0;
  threads_.erase(it);
}

void ThreadRegistry::clear() {
  for (const auto& [tid, thread] : threads_) thread_slot_table()[thread.slot].tid = 0;
  threads_.clear();
  ended_.clear();
}

std::vector<pid_t> ThreadRegistry::gone(const std::unordered_set<pid_t>& alive) const {
  std::vector<pid_t> out;
  for (const auto& [tid, thread] : threads_) {
    if (alive.count(tid) == 0) out.push_back(tid);
  }
  return out;
}

void ThreadRegistry::forget_ended_except(const std::unordered_set<pid_t>& alive) {
  for (auto it = ended_.begin(); it != ended_.end();) {
    it = alive.count(*it) == 0 ? ended_.erase(it) : std::next(it);
  }
}

}  // namespace spyglass
