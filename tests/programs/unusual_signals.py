"""The program's own signal handlers, timers and tracing hooks, one case per run.

usage: unusual_signals.py CASE
  itimer_real | itimer_virtual | itimer_prof   setitimer at 20 ms while the main thread
        computes until it has seen the timer expire 20 times; counts the handler's runs
  alarm         signal.alarm(1) interrupts a long sleep (the handler raises)
  pthread_kill  signal.pthread_kill to a busy worker thread, the handler in the main thread
  sigwait       SIGUSR1 blocked with pthread_sigmask, sent with os.kill, taken with sigwait
  faulthandler  faulthandler.enable() and dump_traceback_later() into a file (argv[2])
  setprofile | settrace   a tiny hook counting events of a fixed workload
  monitoring    sys.monitoring (3.12+) with the profiler tool id, counting events
  realtime_own  a handler of its own on SIGRTMIN+4 (the first real-time signal spyglass
        would pick), 5 copies sent to itself while it computes for 0.6 s of CPU

Prints a JSON object last; `exact` holds what must be identical under any profiler.
"""

import json
import os
import signal
import sys
import threading
import time
from collections import Counter

PERIOD_S = 0.02
EXPIRIES = 20  # of the setitimer timers: 0.4 s of the timer's clock
ROUNDS = 80  # of the workload under a tracing or profiling hook


def spin_once(n):
    total = 0
    for i in range(n):
        total += i * i % 7  # signals:spin
    return total


ITIMERS = {
    "itimer_real": (signal.ITIMER_REAL, signal.SIGALRM),
    "itimer_virtual": (signal.ITIMER_VIRTUAL, signal.SIGVTALRM),
    "itimer_prof": (signal.ITIMER_PROF, signal.SIGPROF),
}


def itimer(case):
    """The handler must run once per expiry of the timer that the program saw go by.

    The timer's own clock is the kernel's (for the CPU-time timers, CPU time counted in
    scheduler ticks, which is not what getrusage says on a busy machine): the program watches
    getitimer()'s time to the next expiry, which jumps back up each time the timer expires.
    Expiries while the program did not run (a busy machine) make the signal pending only
    once, and the program sees them as one jump: either way, one run of the handler."""
    which, signum = ITIMERS[case]
    fired = []
    signal.signal(signum, lambda s, f: fired.append(s))
    signal.setitimer(which, PERIOD_S, PERIOD_S)
    previous, expiries_seen, seen_at = PERIOD_S, 0, time.monotonic()
    deadline = seen_at + 5.0
    while expiries_seen < EXPIRIES and seen_at < deadline:
        spin_once(500)  # signals:timer-spin
        remaining, now = signal.getitimer(which)[0], time.monotonic()
        # The real-time timer also expires while the program is not running, and is
        # re-armed on the grid of its period when its signal is taken: on its clock (wall
        # time) the program can tell that the expiry it was waiting for went by.
        passed = which == signal.ITIMER_REAL and now - seen_at >= previous
        if passed or remaining > previous + PERIOD_S / 4:
            expiries_seen += 1
        previous, seen_at = remaining, now
    signal.setitimer(which, 0)
    return {
        "exact": {"signals": sorted(set(fired)) == [signum]},
        "fired": len(fired),
        "expected": expiries_seen,
    }


class Alarm(Exception):
    pass


def raise_alarm(signum, frame):
    raise Alarm


def alarm(case):
    signal.signal(signal.SIGALRM, raise_alarm)
    spin_once(200_000)
    started = time.monotonic()
    signal.alarm(1)
    try:
        time.sleep(5)  # signals:alarm-sleep
        outcome = "slept on"
    except Alarm:
        outcome = "interrupted by the alarm"
    return {"exact": {"outcome": outcome}, "elapsed_s": time.monotonic() - started}


def pthread_kill(case):
    handled_in = []
    signal.signal(signal.SIGUSR1, lambda s, f: handled_in.append(threading.current_thread().name))
    stop = threading.Event()
    worker_rounds = []

    def worker():
        rounds = 0
        n = 0
        while not stop.is_set():
            for i in range(1_000):
                n = (n + i) % 1_000_003  # signals:worker
            rounds += 1
        worker_rounds.append(rounds)

    thread = threading.Thread(target=worker, name="worker")
    thread.start()
    sent = 0
    for _ in range(10):
        signal.pthread_kill(thread.ident, signal.SIGUSR1)
        sent += 1
        deadline = time.monotonic() + 2.0
        while len(handled_in) < sent and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.02)
    stop.set()
    thread.join()
    return {"exact": {"sent": sent, "handled_in": handled_in, "worker_ran": worker_rounds[0] > 0}}


def sigwait(case):
    """SIGUSR1 blocked in the (only) thread of the program, sent to the process, taken with
    sigwait: a signal the program blocks must stay pending for it, not go elsewhere."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    spin_once(400_000)
    os.kill(os.getpid(), signal.SIGUSR1)
    got = signal.sigwait({signal.SIGUSR1})
    return {"exact": {"got": signal.Signals(got).name}}


def faulthandler_case(case):
    import faulthandler

    faulthandler.enable()
    with open(sys.argv[2], "w") as dump:
        faulthandler.dump_traceback_later(0.2, exit=False, file=dump)
        started = time.monotonic()
        while time.monotonic() - started < 0.4:
            spin_once(2_000)  # signals:faulthandler-spin
        faulthandler.cancel_dump_traceback_later()
    return {"exact": {"enabled": faulthandler.is_enabled()}}


def workload():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    words = [str(i) for i in range(300)]
    return fib(15), sorted(words, key=len)[-1], sum(len(w) for w in words)


def counting_hook(counts):
    def hook(frame, event, arg):
        counts[event] += 1
        return hook

    return hook


def setprofile(case):
    counts = Counter()
    sys.setprofile(counting_hook(counts))
    for _ in range(ROUNDS):
        workload()
    sys.setprofile(None)
    return {"exact": {"result": list(workload())}, "counts": dict(counts)}


def settrace(case):
    counts = Counter()
    sys.settrace(counting_hook(counts))
    for _ in range(ROUNDS):
        workload()
    sys.settrace(None)
    return {"exact": {"result": list(workload())}, "counts": dict(counts)}


def monitoring(case):
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    mon.use_tool_id(tool, "unusual-counter")
    counts = Counter()
    events = {
        "PY_START": mon.events.PY_START,
        "PY_RETURN": mon.events.PY_RETURN,
        "LINE": mon.events.LINE,
        "CALL": mon.events.CALL,
    }
    for name, event in events.items():
        mon.register_callback(tool, event, lambda *args, _name=name: counts.update([_name]))
    mon.set_events(tool, sum(events.values()))
    for _ in range(ROUNDS):
        workload()
    mon.set_events(tool, 0)
    mon.free_tool_id(tool)
    return {"exact": {"result": list(workload()), "tool": tool}, "counts": dict(counts)}


def realtime_own(case):
    """As IPC and worker libraries do with a real-time signal of their own: the handler
    sees the copies the program sends, and only those."""
    signum = signal.SIGRTMIN + 4
    got = []
    signal.signal(signum, lambda s, f: got.append(s))
    start = time.process_time()
    sent = 0
    while time.process_time() - start < 0.6:
        spin_once(2000)  # signals:rt-spin
        if sent < 5 and time.process_time() - start > 0.1 * (sent + 1):
            os.kill(os.getpid(), signum)
            sent += 1

    # Set back to the default and ignored, over and over as it computes (a framework
    # resetting every signal): never fatal, and shown as set.
    def name(h):
        return {signal.SIG_DFL: "default", signal.SIG_IGN: "ignored"}.get(h, "a handler")

    shown = []
    start = time.process_time()
    while time.process_time() - start < 0.3:
        for disposition in (signal.SIG_DFL, signal.SIG_IGN):
            previous = signal.signal(signum, disposition)
            shown.append((name(previous), name(signal.getsignal(signum))))
        spin_once(200)  # signals:rt-reset
    return {"exact": {"sent": sent, "handled": len(got), "shown": sorted(set(shown))}}


CASES = {
    **{name: itimer for name in ITIMERS},
    "alarm": alarm,
    "pthread_kill": pthread_kill,
    "sigwait": sigwait,
    "faulthandler": faulthandler_case,
    "setprofile": setprofile,
    "settrace": settrace,
    "monitoring": monitoring,
    "realtime_own": realtime_own,
}


def main():
    case = sys.argv[1]
    report = CASES[case](case)
    print(f"case {case} done")
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
