// A signal sent to the run's whole process group, delivered once.
//
// `timeout -s INT`, `kill -INT -- -PGID` and process managers signal every process of a
// job's group: the program gets the signal from its sender, and the supervisor gets it
// too. The supervisor cannot tell it from one sent to it alone, which it must pass on, so
// it passes both on, and the program saw two: a second KeyboardInterrupt in the middle of
// its cleanup (exit status -2 where plain python exits 0), or in the middle of printing
// the first one's traceback. So the program's handler is wrapped: a copy passed on by the
// supervisor within kEchoWindowNs of one sent by another process, or one sent by another
// process within kEchoWindowNs of one passed on, is dropped. The program's own signals,
// and the terminal's (which the supervisor does not pass on), are never matched.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace spyglass::platform {

// Who passes signals on to this process: its supervisor's pid (0: nobody, nothing
// dropped).
void note_signal_forwarder(pid_t forwarder);

// Wraps the handler now installed for `signo` (called on the main thread, after each
// signal.signal for it). False when the signal has no handler to wrap, or no forwarder.
bool drop_forwarded_echoes(int signo);

inline constexpr uint64_t kEchoWindowNs = 1'000'000'000;

}  // namespace spyglass::platform
