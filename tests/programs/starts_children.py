"""Starts one Python child the way argv[1] names, then prints the child's exit status:
c          subprocess: python -c <kind_child.py's source> 3
script     subprocess: python argv[2] 4 (a copy of kind_child.py elsewhere)
module     subprocess: python -m kindpkg.work 5, run in directory argv[2]
fork       os.fork(); the child calls kind_child.main(6), which raises SystemExit(6)
mp-fork    multiprocessing.Process(target=kind_child.main, args=(7,)), fork
mp-spawn   the same with spawn
mp-forkserver  the same with forkserver
shell      os.system: a shell runs python kind_child.py 8"""

import json
import multiprocessing
import os
import shlex
import subprocess
import sys

import kind_child

HERE = os.path.dirname(os.path.abspath(__file__))


def status_of(way):
    if way == "c":
        with open(os.path.join(HERE, "kind_child.py"), encoding="utf-8") as f:
            source = f.read()
        return subprocess.run([sys.executable, "-c", source, "3"]).returncode
    if way == "script":
        return subprocess.run([sys.executable, sys.argv[2], "4"]).returncode
    if way == "module":
        command = [sys.executable, "-m", "kindpkg.work", "5"]
        return subprocess.run(command, cwd=sys.argv[2]).returncode
    if way == "shell":
        child = os.path.join(HERE, "kind_child.py")
        status = os.system(f"{shlex.quote(sys.executable)} {shlex.quote(child)} 8")
        return os.waitstatus_to_exitcode(status)
    if way == "fork":
        pid = os.fork()
        if pid == 0:
            kind_child.main(6)  # SystemExit(6) unwinds the child's copy of this program
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    method = way.split("-")[1]
    process = multiprocessing.get_context(method).Process(target=kind_child.main, args=(7,))
    process.start()
    process.join()
    return process.exitcode


if __name__ == "__main__":
    print(json.dumps({"parent": os.getpid(), "status": status_of(sys.argv[1])}), flush=True)
