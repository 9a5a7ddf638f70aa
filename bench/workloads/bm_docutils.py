"""docutils: render generated reStructuredText documents to HTML with docutils.

If docutils is not importable, a stand-in runs instead (reported on stderr as
``bench-variant=fallback``): a small regex-driven reStructuredText-subset to HTML
converter written here, which exercises the same kind of text processing.
"""

import html
import random
import re

from _driver import run

WORDS = [
    "profiler",
    "sample",
    "thread",
    "native",
    "python",
    "line",
    "function",
    "stack",
    "signal",
    "timer",
    "memory",
    "allocation",
    "overhead",
    "accuracy",
    "interpreter",
    "bytecode",
    "frame",
    "module",
    "import",
    "record",
    "report",
]


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    k = rng.randrange(n)
    words[k] = rng.choice(
        ["*{}*", "**{}**", "``{}``", "`{} <https://example.invalid/{}>`_"]
    ).format(words[k], words[k])
    return " ".join(words).capitalize() + "."


def make_document(seed):
    rng = random.Random(seed)
    out = ["=" * 30, f"Document {seed}", "=" * 30, ""]
    for s in range(6):
        title = f"Section {s}: {rng.choice(WORDS)}"
        out += [title, "-" * len(title), ""]
        for _ in range(3):
            out += [" ".join(sentence(rng, rng.randint(6, 14)) for _ in range(4)), ""]
        out += [f"* {sentence(rng, 5)}" for _ in range(4)] + [""]
        out += [f"{k + 1}. {sentence(rng, 6)}" for k in range(3)] + [""]
        out += [":author: bench", f":version: {s}.{seed}", ""]
        out += ["Example::", ""] + [f"    value_{k} = {k * seed}" for k in range(4)] + [""]
        out += ["=====  =====  =======", "name   count  share", "=====  =====  ======="]
        out += [f"{rng.choice(WORDS)[:5]:<5}  {k:<5}  {k / 7:.3f}" for k in range(4)]
        out += ["=====  =====  =======", ""]
    return "\n".join(out) + "\n"


def docutils_render(text):
    from docutils.core import publish_string

    overrides = {"report_level": 5, "halt_level": 5, "output_encoding": "unicode"}
    return publish_string(text, writer_name="html", settings_overrides=overrides)


INLINE = [
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"\*(.+?)\*"), r"<em>\1</em>"),
    (re.compile(r"``(.+?)``"), r"<code>\1</code>"),
    (re.compile(r"`([^`<]+) <([^>]+)>`_"), r'<a href="\2">\1</a>'),
]


def inline(text):
    text = html.escape(text, quote=False)
    for pattern, repl in INLINE:
        text = pattern.sub(repl, text)
    return text


def fallback_render(text):
    out, lines, k = [], text.split("\n"), 0
    while k < len(lines):
        line = lines[k]
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if nxt and set(nxt) <= set("=-") and len(nxt) >= len(line) > 0:
            out.append(f"<h2>{inline(line)}</h2>")
            k += 2
        elif line.startswith(("* ", "- ")):
            out.append(f"<li>{inline(line[2:])}</li>")
            k += 1
        elif re.match(r"\d+\. ", line):
            out.append(f"<li>{inline(line.split('. ', 1)[1])}</li>")
            k += 1
        elif line.startswith("    "):
            out.append(f"<pre>{html.escape(line[4:])}</pre>")
            k += 1
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
            k += 1
        else:
            k += 1
    return "\n".join(out)


def main():
    try:
        import docutils.core  # noqa: F401

        render, variant = docutils_render, "docutils"
    except ImportError:
        render, variant = fallback_render, "fallback"
    documents = [make_document(seed) for seed in range(1, 5)]

    def step(i):
        return len(render(documents[i % len(documents)]))

    run(step, variant=variant)


if __name__ == "__main__":
    main()
