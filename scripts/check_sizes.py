#!/usr/bin/env python3
"""The size budgets of STYLE.md: no source file over 800 lines, no function
over 100, except those listed (with why) in scripts/size_allowances.txt.

    python3 scripts/check_sizes.py [ROOT]

Reads every tracked C++ file (git ls-files, else a walk of the tree). A
function is a definition whose signature line ends in "{" and whose body
closes with "}" at the signature's indentation, as clang-format writes
them; lambdas count toward the function that holds them. Exits 1 listing
each file or function over budget, and each allowance that no longer
matches anything (so the list cannot outlive what it excuses).
"""
import os
import re
import subprocess
import sys

FILE_BUDGET = 800
FUNCTION_BUDGET = 100
SOURCE = re.compile(r"\.(cc|h)$")
NOT_A_FUNCTION = re.compile(
    r"^\s*(if|for|while|switch|else|do|try|catch|namespace|class|struct|union|enum|extern|return)\b|"
    r"=\s*(\[|\{)|^\s*(\}|#|//)")


def tracked_sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
    return sorted(f for f in files if SOURCE.search(f) and os.path.isfile(os.path.join(root, f)))


def signature_start(lines, i):
    """The first line of the signature that ends at line i (a signature may
    wrap: its later lines are indented further or start with ':' or ',')."""
    start = i
    while start > 0 and lines[start - 1].strip() and not lines[start - 1].rstrip().endswith((";", "{", "}")) \
            and not lines[start - 1].lstrip().startswith(("//", "#")):
        start -= 1
    return start


def functions(lines):
    """(name, first line, length) of each function definition: free functions
    and members defined out of line (at column 0) and members defined in a
    class body (at column 2)."""
    found = []
    enclosing = ""  # the last top-level line that opened a block
    for i, line in enumerate(lines):
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            enclosing = " ".join(l.strip() for l in lines[signature_start(lines, i):i + 1])
        if not line.rstrip().endswith("{") or NOT_A_FUNCTION.search(line):
            continue
        start = signature_start(lines, i)
        indent = len(lines[start]) - len(lines[start].lstrip())
        in_class = re.match(r"(template\s*<.*>\s*)?(class|struct|union)\b", enclosing)
        if indent != 0 and not (indent == 2 and in_class):
            continue
        signature = " ".join(l.strip() for l in lines[start:i + 1])
        match = re.search(r"([~\w:]+)\s*\(", signature)
        if not match or NOT_A_FUNCTION.search(lines[start]) or ")" not in signature:
            continue
        closing = " " * indent + "}"
        for j in range(i + 1, len(lines)):
            if lines[j].rstrip() in (closing, closing + ";"):
                found.append((match.group(1), start + 1, j - start + 1))
                break
    return found


def allowances(path):
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise SystemExit(f"{path}:{n}: expected 'FILE' or 'FILE FUNCTION' then '# why'")
            allowed[(parts[0], parts[1])] = n
    return allowed


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    allowed = allowances(os.path.join(root, "scripts", "size_allowances.txt"))
    used, over = set(), []
    for rel in tracked_sources(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > FILE_BUDGET:
            if (rel, "-") in allowed:
                used.add((rel, "-"))
            else:
                over.append(f"{rel}: {len(lines)} lines (budget {FILE_BUDGET})")
        for name, first, length in functions(lines):
            if length <= FUNCTION_BUDGET:
                continue
            if (rel, name) in allowed:
                used.add((rel, name))
            else:
                over.append(f"{rel}:{first}: {name} is {length} lines (budget {FUNCTION_BUDGET})")
    stale = [f"scripts/size_allowances.txt:{n}: {f} {fn} is within budget now (or gone): drop the line"
             for (f, fn), n in sorted(allowed.items(), key=lambda x: x[1]) if (f, fn) not in used]
    for line in over + stale:
        print(line)
    if over or stale:
        print(f"check_sizes: {len(over)} over budget, {len(stale)} stale allowances", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
