"""The Python child of runs_python_subprocess.py."""


def child_work():
    total = 0
    for i in range(6_000_000):
        total = (total + i * i) % 1_000_003  # child:hot
    return total


print("child", child_work())
