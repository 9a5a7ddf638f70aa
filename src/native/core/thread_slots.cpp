#include "thread_slots.hpp"

namespace spyglass {

ThreadSlot* thread_slot_table() {
  // Static storage: constructed on first use (from the control thread, before any timer
  // exists) and deliberately never destroyed, since signals may outlive the profiler.
  static ThreadSlot* table = new ThreadSlot[kMaxThreadSlots];
  return table;
}

}  // namespace spyglass
