// Where a `spyglass run` command line's target begins, read the way the Python command
// line reads it (spyglass/cli/run.py: _split_target_args and run_quick_args), for the
// launcher to start the program before the Python side has even started.
#pragma once

namespace spyglass::launcher {

// The index in argv (argv[0] the command, argv[1] "run") of the script, or of the -m/-c
// that names the target; -1 when the line is one the launcher leaves to the Python
// command line as it is: help, an option it does not know, a program read from stdin,
// a script named like an option after `--`, an attached -mMODULE, or no target at all.
int run_target_index(int argc, const char* const* argv);

}  // namespace spyglass::launcher
