// A termination signal handled in Python, made as sure to end the process as the default
// action is.
//
// spyglass writes a process's profile when it is sent SIGTERM, so it takes the signal with
// a Python handler where the program left the default (which ends the process at once).
// The interpreter runs a Python handler only when its main thread next looks: one that
// arrives just before the main thread blocks in a call the interpreter does not wake
// (a multiprocessing lock's sem_wait, for one) waits for that call forever. A pool
// terminating its workers then waits for them forever too. So the interpreter's own C
// handler is wrapped: the time of a signal not yet seen in Python is noted, and
// spyglass's control thread (at its ticks: kKickAfterNs or the sampling interval, the
// longer) sends it to the main thread again until Python has seen it (the second one
// interrupts the blocked call), and after kGiveUpNs in a native call that never returns
// to the interpreter ends the process with the default action, once, as plain python
// would have at once: the run's journal then stands for its profile.
#pragma once

#include <cstdint>

namespace spyglass::platform {

// Wraps the handler the interpreter installed for `signo` (called on the main thread,
// after signal.signal). False when the signal is not handled (nothing to wrap).
bool watch_termination(int signo);

// Python's handler has run: nothing is pending.
void termination_seen();

// Called from the control thread at every tick: sends a pending signal again after
// kKickAfterNs, and ends the process after kGiveUpNs.
void kick_lost_termination(uint64_t now_ns);

inline constexpr uint64_t kKickAfterNs = 20'000'000;
inline constexpr uint64_t kGiveUpNs = 2'000'000'000;

}  // namespace spyglass::platform
