#!/usr/bin/env python3
"""Renders BENCHMARKS.md's table of current figures from the recorded runs.

    python3 scripts/render_benchmarks.py          # rewrites the tables
    python3 scripts/render_benchmarks.py --check  # exits 1 when a table is stale

What each row is comes from bench/catalogue.json (groups of rows: program,
benchmark name, what it compares, its counters, the issue's goal); the
figures from bench/results/<llvm_cpu>/*.json, Google Benchmark's JSON as
scripts/record_bench.py files it (or a transcribed file, whose context says
`transcribed_from`). Each cell is the newest figure of that row on that CPU
kind: a column per LLVM CPU name seen. A benchmark run with repetitions
contributes its median. A group goes to its "page" (a file of the tree
with the two markers below), BENCHMARKS.md by default: the tool's own
figures (records, RPC, cost model, search) render into
docs/tool-benchmarks.md, to keep BENCHMARKS.md one screenful per table.
"""
import argparse
import json
import os
import sys

BEGIN = "<!-- rendered by scripts/render_benchmarks.py from bench/catalogue.json and bench/results/: edit those, not this -->"
END = "<!-- end of the rendered table -->"


class Error(Exception):
    pass


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise Error(f"{path}: cannot read it ({e.strerror})")
    except ValueError as e:
        raise Error(f"{path}: not JSON ({e})")


def load_catalogue(path):
    catalogue = load_json(path)
    groups = catalogue.get("groups") if isinstance(catalogue, dict) else None
    if not isinstance(groups, list):
        raise Error(f"{path}: needs a list \"groups\"")
    for g, group in enumerate(groups):
        if not isinstance(group.get("title"), str) or not isinstance(group.get("rows"), list):
            raise Error(f"{path}: group {g} needs a \"title\" and a list \"rows\"")
        for r, row in enumerate(group["rows"]):
            for key in ("program", "name", "what"):
                if not isinstance(row.get(key), str) or not row[key]:
                    raise Error(f"{path}: group \"{group['title']}\" row {r} needs a \"{key}\"")
            counters = row.get("counters")
            if not isinstance(counters, list) or not counters or not all(isinstance(c, str) for c in counters):
                raise Error(f"{path}: row {row['name']} needs a non-empty list \"counters\"")
    return groups


class Figure:
    def __init__(self, cpu, program, name, variant, date, values, transcribed):
        self.cpu, self.program, self.name, self.variant = cpu, program, name, variant
        self.date, self.values, self.transcribed = date, values, transcribed


def figures_of_run(path, run):
    """The figures of one results file: a median where the run repeated."""
    context = run.get("context") if isinstance(run, dict) else None
    benchmarks = run.get("benchmarks") if isinstance(run, dict) else None
    if not isinstance(context, dict) or not isinstance(benchmarks, list):
        raise Error(f"{path}: needs a \"context\" and a list \"benchmarks\" (Google Benchmark's JSON)")
    cpu = context.get("llvm_cpu")
    if not isinstance(cpu, str) or not cpu:
        raise Error(f"{path}: its context names no llvm_cpu")
    transcribed = "transcribed_from" in context
    run_date = str(context.get("date", ""))[:10]
    run_program = os.path.basename(str(context.get("executable", "")))
    with_median = {b.get("run_name") for b in benchmarks
                   if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    figures = []
    for b in benchmarks:
        if not isinstance(b, dict) or b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name")
        else:
            if b.get("run_name") in with_median and b.get("run_name") is not None:
                continue
            name = b.get("name")
        program = b.get("program", run_program)
        date = str(b.get("date", run_date))[:10]
        if not isinstance(name, str) or not program or len(date) != 10:
            raise Error(f"{path}: a figure without a name, a program or a date: {json.dumps(b)[:120]}")
        values = {k: v for k, v in b.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        figures.append(Figure(cpu, program, name, b.get("variant", ""), date, values, transcribed))
    model = str(context.get("cpu_model", ""))
    if context.get("target"):
        model += f" ({context['target']})"
    return cpu, model, figures


def load_results(folder):
    figures, models = [], {}
    if not os.path.isdir(folder):
        return figures, models
    for cpu_dir in sorted(os.listdir(folder)):
        sub = os.path.join(folder, cpu_dir)
        if not os.path.isdir(sub):
            continue
        for file in sorted(os.listdir(sub)):
            if not file.endswith(".json"):
                continue
            path = os.path.join(sub, file)
            cpu, model, found = figures_of_run(path, load_json(path))
            if cpu != cpu_dir:
                raise Error(f"{path}: its llvm_cpu is {cpu}, but it is filed under {cpu_dir}/")
            figures.extend(found)
            # The CPU's name from its newest measured run (a transcription's
            # only where no run was measured).
            rank = (any(not f.transcribed for f in found), max((f.date for f in found), default=""))
            if model and (cpu not in models or rank >= models[cpu][0]):
                models[cpu] = (rank, model)
    return figures, {cpu: model for cpu, (_, model) in models.items()}


def row_matching(figure, rows):
    """The catalogue row a figure belongs to: the same program and variant, and
    the longest row name equal to the figure's or a prefix of it up to a '/'
    (Google Benchmark appends /iterations:1/manual_time and the like)."""
    best = None
    for row in rows:
        if row["program"] != figure.program or row.get("variant", "") != figure.variant:
            continue
        name = row["name"]
        if figure.name == name or figure.name.startswith(name + "/"):
            if best is None or len(name) > len(best["name"]):
                best = row
    return best


def number(v):
    """Two decimals from 0.1 to 10 (0.97, 1.00), three significant digits
    above (10.2, 771), two below (0.083); whole numbers from 1000."""
    if v == 0 or abs(v) >= 1000:
        return f"{v:.0f}"
    if 0.1 <= abs(v) < 10:
        return f"{v:.2f}"
    if abs(v) >= 10:
        return f"{v:.3g}" if abs(v) < 100 or v == int(v) else f"{v:.0f}"
    return f"{v:#.2g}"


def cell(figure, counters):
    values = [number(figure.values[c]) if c in figure.values else "–" for c in counters]
    mark = "*" if figure.transcribed else ""
    return " · ".join(values) + mark + f" ({figure.date[5:]})"


def newest_figures(groups, figures):
    """The newest figure of each (row, CPU), and the figures no row takes."""
    rows = [row for g in groups for row in g["rows"]]
    newest, unmatched = {}, []
    for f in figures:
        row = row_matching(f, rows)
        if row is None:
            unmatched.append(f)
            continue
        if not any(c in f.values for c in row["counters"]):
            continue
        key = (id(row), f.cpu)
        if key not in newest or (f.date, not f.transcribed) >= (newest[key].date, not newest[key].transcribed):
            newest[key] = f
    return newest, unmatched


def render(groups, newest, models):
    """The rendered block of one page: its groups, a column per CPU seen."""
    row_ids = {id(row) for g in groups for row in g["rows"]}
    cpus = sorted({cpu for (row_id, cpu) in newest if row_id in row_ids})
    lines = [BEGIN, ""]
    lines.append("Columns, by LLVM's name of the CPU: " +
                 "; ".join(f"`{c}`: {models.get(c) or 'CPU model not recorded'}" for c in cpus) + ".")
    lines.append("Each cell is the newest figure (month-day); * marks one transcribed from the hand-written "
                 "table before runs were recorded as data (its file keeps the original cell).")
    for group in groups:
        # One program for the whole group: named once, in the heading.
        programs = {row["program"] for row in group["rows"]}
        program = programs.pop() if len(programs) == 1 else None
        title = group["title"]
        if program and program not in title:
            title += f" (`{program}`)"
        lines += ["", f"### {title}", ""]
        if group.get("note"):
            lines += [group["note"], ""]
        lines.append("| benchmark | compares | counters | goal | " + " | ".join(f"`{c}`" for c in cpus) + " |")
        lines.append("|" + "---|" * (4 + len(cpus)))
        for row in group["rows"]:
            name = (row["name"] if program else f"`{row['program']}` {row['name']}") + \
                (f" ({row['variant']})" if row.get("variant") else "")
            cells = [cell(newest[(id(row), c)], row["counters"]) if (id(row), c) in newest else "—" for c in cpus]
            lines.append(f"| {name} | {row['what']} | {' · '.join(row['counters'])} | {row.get('goal') or ''} | " +
                         " | ".join(cells) + " |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def rendered_block(text, path):
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise Error(f"{path}: no rendered table (the markers {BEGIN[:40]}... and {END} are missing)")
    return start, end + len(END) + 1


def pages_of(groups):
    """The groups of each page, in catalogue order: a group's "page" (a path
    in the tree), BENCHMARKS.md by default."""
    pages = {}
    for group in groups:
        pages.setdefault(group.get("page", "BENCHMARKS.md"), []).append(group)
    return pages


def main(argv):
    parser = argparse.ArgumentParser(description="Renders the benchmark tables from bench/results/.")
    parser.add_argument("--check", action="store_true", help="exit 1 when a table is stale")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the source tree (default: this script's)")
    args = parser.parse_args(argv[1:])
    try:
        groups = load_catalogue(os.path.join(args.root, "bench", "catalogue.json"))
        figures, models = load_results(os.path.join(args.root, "bench", "results"))
        newest, unmatched = newest_figures(groups, figures)
        updates = []
        for page, page_groups in pages_of(groups).items():
            path = os.path.join(args.root, page)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise Error(f"{path}: cannot read it ({e.strerror})")
            start, end = rendered_block(text, path)
            table = render(page_groups, newest, models)
            if text[start:end] != table:
                updates.append((page, path, text[:start] + table + text[end:]))
    except Error as e:
        print(f"render_benchmarks: {e}", file=sys.stderr)
        return 2
    for name in sorted({f"{f.program} {f.name}" for f in unmatched}):
        print(f"render_benchmarks: no row of bench/catalogue.json for {name}", file=sys.stderr)
    if args.check:
        for page, _, _ in updates:
            print(f"render_benchmarks: {page}'s table is stale: run python3 scripts/render_benchmarks.py",
                  file=sys.stderr)
        return 1 if updates else 0
    for page, path, text in updates:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        print(f"render_benchmarks: rendered {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
