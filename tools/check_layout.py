#!/usr/bin/env python3
"""The house's size and dependency rules (issue #14), checked on the source tree.

  - tools/stallscope.cc (main + CLI11 wiring) has at most 250 lines;
  - no source file (.h .cc .cu .cuh) has more than 600 lines;
  - no function body has more than 120 lines;
  - each folder's library links only what its room needs: the pipeline library reaches no
    yaml-cpp, prometheus-cpp or the config/report/metrics/sim/app libraries, and the gpu
    libraries reach none of the pipeline's outputs (pipeline, config, sim, report, metrics,
    app) — only base, through CMake's target_link_libraries, transitively.

Run: tools/check_layout.py [ROOT]   (exit 1 and one line per violation when a rule is broken).
tests/CMakeLists.txt runs it as the ctest `layout_test`.
"""
import os
import re
import sys

MAX_MAIN_LINES = 250
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120
SOURCE_DIRS = ["base", "storage", "cache", "pipeline", "gpu", "config", "sim", "report",
               "metrics", "app", "tools", "tests"]
EXTENSIONS = (".h", ".cc", ".cu", ".cuh")


def source_files(root):
    for d in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, n)


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNCTION_START = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[\w:<>&*\s]+)?\{\s*$")
NOT_A_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|do|else)\b|\b(if|for|while|switch)\s*\(|=\s*\[|\]\s*\(|^\s*\[")


def long_functions(path):
    code = strip_code(open(path, encoding="utf-8", errors="replace").read()).split("\n")
    found = []
    i = 0
    while i < len(code):
        line = code[i]
        if FUNCTION_START.search(line) and not NOT_A_FUNCTION.search(line):
            depth, j = 0, i
            while j < len(code):
                depth += code[j].count("{") - code[j].count("}")
                if depth <= 0 and j >= i:
                    break
                j += 1
            body = j - i - 1
            if body > MAX_FUNCTION_LINES:
                found.append((i + 1, body, line.strip()[:60]))
            i = j + 1 if found and found[-1][0] == i + 1 else i + 1
            continue
        i += 1
    return found


def link_graph(root):
    graph = {}
    for dirpath, _, names in os.walk(root):
        if "/build" in dirpath or "/.git" in dirpath:
            continue
        if "CMakeLists.txt" in names:
            text = open(os.path.join(dirpath, "CMakeLists.txt")).read()
            for m in re.finditer(r"target_link_libraries\(\s*(\S+)([^)]*)\)", text):
                deps = [d for d in m.group(2).split() if d not in ("PUBLIC", "PRIVATE", "INTERFACE")]
                graph.setdefault(m.group(1), set()).update(deps)
    return graph


def reach(graph, target):
    seen, todo = set(), [target]
    while todo:
        t = todo.pop()
        for d in graph.get(t, ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    main_lines = len(open(os.path.join(root, "tools/stallscope.cc")).read().split("\n")) - 1
    if main_lines > MAX_MAIN_LINES:
        problems.append(f"tools/stallscope.cc: {main_lines} lines (at most {MAX_MAIN_LINES})")
    files = 0
    for path in source_files(root):
        files += 1
        rel = os.path.relpath(path, root)
        lines = len(open(path, encoding="utf-8", errors="replace").read().split("\n")) - 1
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
        for line, body, head in long_functions(path):
            problems.append(f"{rel}:{line}: a function of {body} lines (at most {MAX_FUNCTION_LINES}): {head}")
    graph = link_graph(root)
    outputs = {"stallscope_config", "stallscope_sim", "stallscope_report", "stallscope_metrics",
               "stallscope_app", "yaml-cpp", "prometheus-cpp::core", "prometheus-cpp::push"}
    rules = {"stallscope_pipeline": outputs,
             "stallscope_gpu": outputs | {"stallscope_pipeline"},
             "stallscope_gpu_cuda": outputs | {"stallscope_pipeline"},
             "stallscope_storage": outputs | {"stallscope_pipeline", "stallscope_cache"},
             "stallscope_cache": outputs | {"stallscope_pipeline"},
             "stallscope_config": {"stallscope_sim", "stallscope_report", "stallscope_metrics",
                                   "stallscope_app", "prometheus-cpp::core"}}
    for target, banned in rules.items():
        if target not in graph:
            problems.append(f"{target}: no target_link_libraries found")
            continue
        bad = sorted(reach(graph, target) & banned)
        if bad:
            problems.append(f"{target} links {', '.join(bad)}")
    for p in problems:
        print(p)
    print(f"check_layout: {files} source files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
