"""What `spyglass run` must treat as plain python does: argv[1] picks the case. Each does
CPU work in work() first, then prints its pid and its stack as traceback shows it."""

import os
import signal
import sys
import time
import traceback


def work():
    total = 0
    # About 0.1 s: 5 samples or more on the line even on a fast machine, where a killed
    # run (its last interval lost) had 4 with half as many.
    for i in range(3_000_000):
        total = (total + i * i) % 1_000_003  # supervised:work
    return total


def ready(path):
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(path + ".tmp", path)


case = sys.argv[1]
work()
print("pid", os.getpid())
print("stack", [f.name for f in traceback.extract_stack()])
sys.stdout.flush()
if case == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif case == "sigterm-handled":
    signal.signal(signal.SIGTERM, lambda s, f: (print("got SIGTERM"), sys.exit(0)))
    ready(sys.argv[2])
    time.sleep(30)
elif case.startswith("handles-"):  # handles-NUMBER: a signal it handles and exits on
    signum = int(case.split("-")[1])
    signal.signal(signum, lambda s, f: (print("got", s), sys.exit(0)))
    ready(sys.argv[2])
    time.sleep(30)
elif case == "wait":
    ready(sys.argv[2])
    time.sleep(30)
elif case == "counts-sigint":  # a handler of its own, which signal.signal installs
    got = []
    signal.signal(signal.SIGINT, lambda s, f: got.append(s))
    ready(sys.argv[2])
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # a second copy would come meanwhile
    print("SIGINTs", len(got))
elif case == "interrupts-itself":  # a shutdown that puts the default back and raises again

    def shut_down(signum, frame):
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), signal.SIGINT)  # its own: to be delivered, however soon

    signal.signal(signal.SIGINT, shut_down)
    ready(sys.argv[2])
    try:
        time.sleep(30)
    except KeyboardInterrupt:
        print("interrupted by itself")
elif case == "interrupted":
    ready(sys.argv[2])
    try:
        time.sleep(30)
    except KeyboardInterrupt:
        print("KeyboardInterrupt once")
        time.sleep(0.3)  # a second SIGINT would land here
        print("cleaned up")
