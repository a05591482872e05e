#!/usr/bin/python3
"""Checks every `#include "..."` of the source tree against the dependency table.

Usage: check_deps.py ROOT [--table FILE]   (FILE defaults to ROOT/docs/dependencies.txt)

Prints one line per forbidden include, `file:line: includes "x": forbidden edge
A -> B (...)`, and exits 1 when there is any; exits 0 silently otherwise.
"""
import os
import re
import sys

SOURCE_SUFFIXES = ('.h', '.hpp', '.hh', '.inc', '.c', '.cc', '.cpp')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# "The compiler does not know the tuner" (DESIGN.md), stated on its own so that
# the message names the contract even if the table were edited to allow it.
COMPILER_MUST_NOT_INCLUDE = ('tuner', 'records', 'rpc', 'costmodel')


def read_table(path):
    """{folder: set of folders it names, or {'*'}}, in the file's order."""
    table = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            folder, sep, deps = line.partition(':')
            if not sep:
                raise SystemExit(f'{path}:{number}: expected "folder: dependencies"')
            table[folder.strip()] = set(deps.split())
    for folder, deps in table.items():
        for dep in deps - {'*'}:
            if dep not in table:
                raise SystemExit(f'{path}: {folder} names {dep}, which is not a folder of the table')
    return table


def closure(table):
    """Every folder each folder may reach, following the edges transitively."""
    reach = {}
    for folder in table:
        seen, todo = set(), list(table[folder])
        while todo:
            dep = todo.pop()
            if dep not in seen:
                seen.add(dep)
                todo.extend(table.get(dep, ()))
        reach[folder] = seen
    return reach


def owner(path, table):
    """The longest folder of the table that contains `path`, or None."""
    best = None
    for folder in table:
        if path == folder or path.startswith(folder + '/'):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def forwarded(root, include, depth=0):
    """A forwarding header left by a move (a comment that says "forwarding
    header", `#pragma once` and one include, nothing else) counts as the header
    it forwards to."""
    path = os.path.join(root, include)
    if depth > 8 or not os.path.isfile(path):
        return include
    includes, other, marked = [], False, False
    with open(path, errors='replace') as f:
        for line in f:
            text = line.strip()
            if text.startswith('//'):
                marked = marked or 'forwarding header' in text
                continue
            if not text or text == '#pragma once':
                continue
            m = INCLUDE.match(text)
            if m:
                includes.append(m.group(1))
            else:
                other = True
    if marked and len(includes) == 1 and not other:
        return forwarded(root, includes[0], depth + 1)
    return include


def source_files(root):
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        dirs[:] = sorted(d for d in dirs if not d.startswith('.') and not d.startswith('build')
                         and d != 'node_modules')
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.normpath(os.path.join(rel_dir, name))


def check(root, table):
    """The problems found, as printable lines."""
    reach = closure(table)
    problems = []
    for path in source_files(root):
        if os.sep == '\\':
            path = path.replace('\\', '/')
        src = owner(path, table)
        if src is None:
            if '/' in path:  # top-level files (none today) belong to no folder
                problems.append(f'{path}: its folder is not in the dependency table')
            continue
        with open(os.path.join(root, path), errors='replace') as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                include = m.group(1)
                dst = owner(forwarded(root, include), table)
                if dst is None or dst == src:
                    continue  # another library's header, or the folder's own
                where = f'{path}:{number}: includes "{include}"'
                if src.startswith('compiler/') and dst.split('/')[0] in COMPILER_MUST_NOT_INCLUDE:
                    problems.append(f'{where}: the compiler does not know the tuner: nothing in compiler/ '
                                    f'includes {"/, ".join(COMPILER_MUST_NOT_INCLUDE)}/')
                elif '*' not in reach[src] and dst not in reach[src]:
                    allowed = ', '.join(sorted(reach[src])) or 'nothing'
                    problems.append(f'{where}: forbidden edge {src} -> {dst} ({src} may depend on: {allowed})')
    return problems


def main(argv):
    if len(argv) < 2 or argv[1].startswith('-'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1]
    table_path = os.path.join(root, 'docs', 'dependencies.txt')
    if len(argv) == 4 and argv[2] == '--table':
        table_path = argv[3]
    problems = check(root, read_table(table_path))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f'check_deps: {len(problems)} include(s) against {table_path}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
