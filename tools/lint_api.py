#!/usr/bin/env python3
"""tools/lint_api.py — the doors inside api/ open one way.

    endpoints/ -> request/ -> http/ -> render/ -> json/ -> core/

api/api.c (the router) and api/api.h (what the server includes) sit above them all.
A file may include, or call a function defined in, its own room or a room to its
right; never one to its left. And no two api/ files may depend on each other through
any chain (a cycle), inside a room or across rooms, so that a change to one file
never reaches back to itself.

A unit is a file's path without its extension (api/json/write.c and .h are one unit).
Its edges are its `#include "api/..."` lines and its calls of api_* and jw_*
functions, in its .c or .cc, that exactly one other unit defines. Prints each violation and exits 1;
`lint_api.py ROOT` lints the tree at ROOT (tests/lint/run.sh plants violations in a
copy).
"""
import os
import re
import sys

ROOMS = ["json", "render", "http", "request", "endpoints"]  # lowest first
TOP = len(ROOMS)  # api/api.c and api/api.h
ROOT_FILES = {"api.c", "api.h", "embedded.S", "openapi.yaml"}
SOURCE = (".c", ".cc", ".h")


def rank_of(unit):
    """The room's height of api/<room>/<name>, TOP for api/api; None when not in a room."""
    parts = unit.split("/")
    if len(parts) == 2:
        return TOP
    if len(parts) == 3 and parts[1] in ROOMS:
        return ROOMS.index(parts[1])
    return None


def read_units(root):
    units, problems = {}, []
    for folder, _, files in os.walk(os.path.join(root, "api")):
        for name in sorted(files):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if not name.endswith(SOURCE):
                continue
            unit = re.sub(r"\.(c|cc|h)$", "", rel)
            if rank_of(unit) is None:
                problems.append("%s: not in a room; api/ holds %s and the router (api.c, api.h)"
                                % (rel, ", ".join(r + "/" for r in ROOMS)))
                continue
            if rel.count("/") == 1 and name not in ROOT_FILES:
                problems.append("%s: only the router (api.c, api.h) lives at api/'s root; put "
                                "it in a room" % rel)
            with open(path, encoding="utf-8", errors="replace") as f:
                units.setdefault(unit, []).append((rel, f.read()))
    return units, problems


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


DEF = re.compile(r"^[A-Za-z_][\w \*]*?\b((?:api|jw)_\w+)\s*\([^;{]*\)\s*\{", re.M)
CALL = re.compile(r"\b((?:api|jw)_\w+)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(api/[^"]+)\.(h|hh)"', re.M)


def read_edges(units):
    """unit -> {unit: (file, line, what)} for every include and call of another unit."""
    defined = {}
    for unit, files in units.items():
        for rel, text in files:
            if not rel.endswith(".h"):
                for m in DEF.finditer(strip_comments(text)):
                    defined.setdefault(m.group(1), set()).add(unit)
    edges = {u: {} for u in units}
    for unit, files in units.items():
        for rel, text in files:
            code = strip_comments(text)
            for m in INCLUDE.finditer(code):
                target = m.group(1)
                if target in units and target != unit:
                    line = code.count("\n", 0, m.start()) + 1
                    edges[unit].setdefault(target, (rel, line, "includes %s.h" % target))
            for m in CALL.finditer(code if not rel.endswith(".h") else ""):
                owners = defined.get(m.group(1), set())
                if len(owners) == 1:
                    target = next(iter(owners))
                    if target != unit:
                        line = code.count("\n", 0, m.start()) + 1
                        edges[unit].setdefault(target, (rel, line, "calls %s (%s)"
                                                        % (m.group(1), target)))
    return edges


def upward(edges):
    out = []
    for unit in sorted(edges):
        for target, (rel, line, what) in sorted(edges[unit].items()):
            if rank_of(target) > rank_of(unit):
                out.append("%s:%d: %s, a room above %s/; doors open one way: %s"
                           % (rel, line, what, unit.rsplit("/", 1)[0],
                              " -> ".join(r + "/" for r in reversed(ROOMS))))
    return out


def cycles(edges):
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    out = []
    for comp in comps:
        links = ["  %s:%d: %s" % edges[u][t] for u in comp for t in sorted(edges[u]) if t in comp]
        out.append("cycle of %d api/ files: %s\n%s" % (len(comp), ", ".join(comp), "\n".join(links)))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    units, problems = read_units(root)
    edges = read_edges(units)
    problems += upward(edges) + cycles(edges)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("api rooms: %d violations above" % len(problems), file=sys.stderr)
        return 1
    n_edges = sum(len(e) for e in edges.values())
    print("api rooms: %d units, %d edges, none upward, no cycle" % (len(units), n_edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
