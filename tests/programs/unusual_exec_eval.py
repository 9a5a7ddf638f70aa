"""Code run through exec and eval, and code generated at run time and compiled under a name
of its own ("<generated>"): none of it lives in a file of the program.

Prints the results.
usage: unusual_exec_eval.py
"""

EXEC_SOURCE = """
total = 0
for i in range(1_000_000):
    total = (total + i * 3) % 1_000_003
"""

EVAL_SOURCE = "[(i * i) % 7 for i in range(1_000_000)].count(2)"

GENERATED_SOURCE = """
def generated_work(n):
    acc = 0
    for i in range(n):
        acc = (acc ^ (i * 5)) % 1_000_003
    return acc
"""


def main():
    scope = {}
    exec(EXEC_SOURCE, scope)  # exec:exec-call
    counted = eval(EVAL_SOURCE)  # exec:eval-call
    code = compile(GENERATED_SOURCE, "<generated>", "exec")
    generated = {}
    exec(code, generated)
    acc = generated["generated_work"](1_000_000)  # exec:generated-call
    print(f"exec total {scope['total']}, eval count {counted}, generated {acc}")


if __name__ == "__main__":
    main()
