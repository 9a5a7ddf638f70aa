// The status a process leaves with: a Python child's exit status is known only to the
// process that waits for it, and to the C library's exit(), after the interpreter (and
// every Python exit hook) has finished.
#pragma once

#include <string>

namespace spyglass::platform {

// Writes the status this process passes to exit() into `path`, as decimal text, once
// everything else has run. Calling it again (in a forked child, say) replaces the path;
// a forked child that does not call it writes nothing. False if the hook cannot be set.
bool note_exit_status(const std::string& path);

}  // namespace spyglass::platform
