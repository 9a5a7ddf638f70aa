"""The program's own interval timer (setitimer ITIMER_REAL -> SIGALRM) must keep firing
while it is profiled: during Python work, during native work and during a sleep, which
must still last its full time (PEP 475 resumes it after each handler).

Prints JSON: how often the handler ran in each phase and how long the phases took.
usage: own_sigalrm_timer.py   (spin_ext must be importable)
"""

import json
import signal
import time

import spin_ext

PERIOD_S = 0.02
WANTED = 10  # handler runs per phase
fired = 0


def on_alarm(signum, frame):
    global fired
    fired += 1


def python_phase(deadline):
    n = 0
    while fired < WANTED and time.monotonic() < deadline:
        n = (n * 7 + 1) % 1_000_003
    return n


def native_phase(deadline):
    while fired < WANTED and time.monotonic() < deadline:
        spin_ext.spin_with_gil(0.005)


def main():
    global fired
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, PERIOD_S, PERIOD_S)
    report = {"handler_installed": signal.getsignal(signal.SIGALRM) is on_alarm}
    report["timer_interval_s"] = signal.getitimer(signal.ITIMER_REAL)[1]

    fired, started = 0, time.monotonic()
    python_phase(started + 3.0)
    report["python"] = {"fired": fired, "elapsed_s": time.monotonic() - started}

    fired, started = 0, time.monotonic()
    native_phase(started + 3.0)
    report["native"] = {"fired": fired, "elapsed_s": time.monotonic() - started}

    fired, started = 0, time.monotonic()
    time.sleep(0.25)
    report["sleep"] = {"fired": fired, "elapsed_s": time.monotonic() - started}

    signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
