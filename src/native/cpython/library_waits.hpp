// Python threads found blocked inside a call into a library's code, when, and where. A
// library that hands a call's work to threads of its own (polars and its rayon pool, a C
// extension that starts a thread and joins it, a reader's pool of Python threads) leaves
// the calling thread waiting on a latch while they run: their CPU is that call's, as a BLAS
// pool's is its running caller's. The wait engine notes such threads every interval it
// finds them so; a sample of a thread of the library's own is lent the thread that was
// waiting in a call into the same package (platform::package_key) when the sample was
// taken, so that a thread blocked in a database driver is not lent the CPU of NumPy's BLAS
// threads. Guarded by the collector's lock, as the collection is.
//
// Samples are matched by the time they were taken, not the time they are drained: a
// library thread's samples wait in its ring, or held for a call-site table, while the
// caller returns and blocks elsewhere, and matched on draining, a pool's last chunks went
// to no line (a fifth to a third of a 0.5 s call on a loaded machine). So a wait ended is
// kept a while for the samples taken during it.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "../platform/clock.hpp"

namespace spyglass::cpython {

// How long after a thread was noted blocked in a library's call its note still lends: a
// few of the wait engine's intervals (its looks: the sampling interval, or the control
// thread's tick when that is longer), as it notes such threads at each look. A note older
// than that lends while its thread has not run since (below).
inline constexpr uint64_t kLendIntervals = 4;

// What LibraryWaits::during asks the kernel of a thread.
struct ThreadProbe {
  bool cpu_ns(pid_t tid, uint64_t* ns) const { return platform::thread_cpu_ns(tid, ns); }
  bool blocked(pid_t tid) const { return platform::thread_is_blocked(tid); }
};

class LibraryWaits {
 public:
  static constexpr uint64_t kOpen = UINT64_MAX;
  // How long an ended wait is kept for samples taken during it and drained since: well
  // beyond the memory engine's drain period and a held sample's wait for its table.
  static constexpr uint64_t kKeepNs = 2'000'000'000;
  static constexpr size_t kKeptPerThread = 16;

  // One wait of a thread in a library's call, at one place.
  struct Noted {
    size_t stack;       // a stack of the collection
    uint64_t package;   // platform::CodeRanges::package_of / platform::installed_package
    uint64_t line;      // the line key (memory_stats.hpp) of its innermost frame of the program
    uint64_t from_ns;   // the earliest sample time it covers
    uint64_t at_ns;     // last found there, or found not to have run since
    uint64_t noted_ns;  // last found there by the wait engine
    uint64_t cpu_ns;    // its CPU clock at `at_ns`; 0: not read
    uint64_t until_ns;  // found elsewhere (or ended) by then; kOpen while not
    uint64_t running_ns = 0;  // when its thread was last probed and found running
    pid_t tid = 0;            // the thread waiting
  };

  // How long a note lends past `at_ns`; 0 (the default): notes lend nothing.
  void set_window(uint64_t ns) { window_ns_ = ns; }
  uint64_t window() const { return window_ns_; }

  // `tid` is blocked now, at `stack`, whose innermost line of the program is `line`, in a
  // call into code of `package`, and has been waiting since about `since_ns`; its CPU
  // clock reads `cpu_ns`.
  void note(pid_t tid, size_t stack, uint64_t package, uint64_t line, uint64_t since_ns,
            uint64_t now_ns, uint64_t cpu_ns) {
    prune(now_ns);
    std::vector<Noted>& waits = by_thread_[tid];
    // The same wait, if on the same line in a call into the same package and it has not
    // run more than a little since: a caller taking a pool's results one by one is found
    // at one frame and then another of the library's. One that ran (a loop calling the
    // library and computing in turn) waits anew: its wait does not cover its computing.
    if (!waits.empty() && waits.back().until_ns == kOpen && waits.back().line == line &&
        waits.back().package == package && ran_little(waits.back(), now_ns, cpu_ns)) {
      Noted& same = waits.back();
      same.stack = stack;
      same.at_ns = std::max(same.at_ns, now_ns);
      same.noted_ns = now_ns;
      same.cpu_ns = cpu_ns;
      return;
    }
    // A sample up to two looks' intervals before the wait began: the call may hand out its
    // work before its thread blocks, and on a busy CPU the thread it handed it to may run
    // first (a pool thread's buffer, allocated as it started, came 10 ms before its
    // caller, queued for the one CPU, blocked). Not before the thread's previous wait ended.
    const uint64_t since = std::min(since_ns, now_ns);
    const uint64_t interval = 2 * window_ns_ / kLendIntervals;
    uint64_t from = since > interval ? since - interval : 0;
    if (!waits.empty()) {
      close(waits.back(), now_ns);
      from = std::max(from, waits.back().until_ns);
    }
    if (waits.size() == kKeptPerThread) waits.erase(waits.begin());
    waits.push_back(Noted{stack, package, line, from, now_ns, now_ns, cpu_ns, kOpen, 0, tid});
  }
  // `tid` has not run since its latest note (its CPU clock reads `cpu_ns`, as it did
  // then): found there again now, as note() would find it.
  void still_there(pid_t tid, uint64_t now_ns, uint64_t cpu_ns) {
    prune(now_ns);
    auto it = by_thread_.find(tid);
    if (it == by_thread_.end() || it->second.empty()) return;
    Noted& last = it->second.back();
    if (last.until_ns != kOpen || last.cpu_ns != cpu_ns || cpu_ns == 0) return;
    last.at_ns = std::max(last.at_ns, now_ns);
    last.noted_ns = now_ns;
  }
  // `tid` was found blocked elsewhere, or has ended: its wait is over.
  void forget(pid_t tid, uint64_t now_ns) {
    auto it = by_thread_.find(tid);
    if (it != by_thread_.end() && !it->second.empty()) close(it->second.back(), now_ns);
    prune(now_ns);
  }
  // `tid` ran `used_ns` of CPU lately: more than a little, and it left any call it waited
  // in (it computes).
  void ran(pid_t tid, uint64_t used_ns, uint64_t now_ns) {
    if (used_ns > window_ns_ / 4 && by_thread_.count(tid) != 0) forget(tid, now_ns);
  }
  // Whether `tid` was noted waiting in a library's call on line `line` at some time in
  // [from_ns, to_ns]: its time off the CPU then was inside that call.
  bool waited_on(pid_t tid, uint64_t line, uint64_t from_ns, uint64_t to_ns) const {
    auto it = by_thread_.find(tid);
    if (it == by_thread_.end()) return false;
    for (const Noted& n : it->second) {
      if (n.line == line && n.from_ns <= to_ns && (n.until_ns == kOpen || n.until_ns >= from_ns)) {
        return true;
      }
    }
    return false;
  }
  void clear() { by_thread_.clear(); }
  bool empty() const { return window_ns_ == 0 || by_thread_.empty(); }

  // The wait, of a thread other than `except`, in a call into a package `of_package`
  // accepts, that a sample taken at `t_ns` fell in; null when none did. With several
  // such waits, the one the wait engine noted last takes all: which of them a library
  // thread works for is not known.
  //
  // A wait not noted for longer than the window is still on if its thread has not run
  // since (`probe`, a ThreadProbe's kind, reads its CPU clock): a thread that has not run
  // is where it was noted. Or if it ran a little and is blocked again: a caller taking a
  // pool's results one by one wakes for each. The wait engine's notes stall while it waits
  // for the GIL, which on 3.9 the library's threads, spinning, kept from it for 40-50 ms
  // at a time; its next note tells where the thread went. A thread that ran more than a
  // little has left: its wait ends a window after its last note.
  template <typename OfPackage, typename Probe>
  const Noted* during(uint64_t t_ns, uint64_t now_ns, OfPackage&& of_package, pid_t except,
                      Probe&& probe) {
    if (window_ns_ == 0) return nullptr;
    Noted* best = nullptr;
    for (auto& [tid, waits] : by_thread_) {
      if (tid == except) continue;
      for (Noted& noted : waits) {
        if (!of_package(noted.package) || !covers(tid, noted, t_ns, now_ns, probe)) continue;
        if (best == nullptr || noted.noted_ns > best->noted_ns) best = &noted;
      }
    }
    return best;
  }

 private:
  template <typename Probe>
  bool covers(pid_t tid, Noted& noted, uint64_t t_ns, uint64_t now_ns, Probe& probe) const {
    if (t_ns < noted.from_ns) return false;
    if (noted.until_ns != kOpen) return t_ns <= noted.until_ns;
    if (t_ns <= noted.at_ns + window_ns_) return true;
    // Found running a moment ago: not probed again for each of a burst of samples drained
    // together (a probe may read /proc).
    if (noted.running_ns != 0 && now_ns < noted.running_ns + window_ns_ / 64) return false;
    uint64_t cpu = 0;
    if (noted.cpu_ns == 0 || !probe.cpu_ns(tid, &cpu) || !ran_little(noted, now_ns, cpu)) {
      close(noted, now_ns);  // gone computing, or ended
      return t_ns <= noted.until_ns;
    }
    if (cpu != noted.cpu_ns && !probe.blocked(tid)) {
      noted.running_ns = now_ns;
      return false;
    }
    noted.at_ns = std::max(noted.at_ns, now_ns);
    noted.cpu_ns = cpu;
    return true;
  }
  // `noted`'s thread, its CPU clock reading `cpu_ns` at `now_ns`, has run no more than a
  // quarter of the window since it was noted: woken for a result, not gone computing.
  bool ran_little(const Noted& noted, uint64_t now_ns, uint64_t cpu_ns) const {
    if (noted.cpu_ns == 0 || cpu_ns == 0) return now_ns <= noted.at_ns + window_ns_;
    return cpu_ns >= noted.cpu_ns && cpu_ns - noted.cpu_ns <= window_ns_ / 4;
  }
  // Found elsewhere at `now_ns`: it left between its last note and then, at most a window
  // after that note.
  void close(Noted& noted, uint64_t now_ns) const {
    if (noted.until_ns == kOpen) noted.until_ns = std::min(now_ns, noted.at_ns + window_ns_);
  }
  void prune(uint64_t now_ns) {
    for (auto it = by_thread_.begin(); it != by_thread_.end();) {
      std::vector<Noted>& waits = it->second;
      waits.erase(std::remove_if(waits.begin(), waits.end(),
                                 [now_ns](const Noted& n) {
                                   return n.until_ns != kOpen && n.until_ns + kKeepNs < now_ns;
                                 }),
                  waits.end());
      it = waits.empty() ? by_thread_.erase(it) : std::next(it);
    }
  }

  uint64_t window_ns_ = 0;
  std::unordered_map<pid_t, std::vector<Noted>> by_thread_;
};

}  // namespace spyglass::cpython
