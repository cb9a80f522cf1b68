#!/usr/bin/env python3
"""tools/lint_rooms.py — the doors inside api/ and server/ open one way.

    api/:     endpoints/ -> request/ -> http/ -> render/ -> json/ -> i18n/ (and core/)
    server/:  lane/ -> codec/ -> net/ -> ops/ -> host/

api/api.c (the router) and api/api.h (what the server includes) sit above api/'s
rooms; server/'s wiring (main, daemon, exchange and the rest) sits above
its rooms, at its root. A file may include, or call a function defined in, its own
room or a room to its right; never one to its left. And no two files of a house may
depend on each other through any chain (a cycle), inside a room, across rooms or
among the wiring, so that a change to one file never reaches back to itself. core/
is one flat room, checked for cycles alone. A room's test_hooks.h (what the tests reach
into) is included by that room's own files and tests/ alone.

api/endpoints/ holds a folder per family (attention/, v2/, ...), one level deeper, of
the same room. A unit is a file's path without its extension (api/json/write.c and .h
are one unit).
Its edges are its `#include "api/..."` (or "server/...") lines and its calls of the
house's functions (api_* and jw_*, or srv_*), in its .c or .cc, that exactly one other
unit defines. Prints each violation and exits 1; `lint_rooms.py ROOT` lints the tree at
ROOT (tests/lint/run.sh plants violations in a copy).
"""
import os
import re
import sys

class House:
    def __init__(self, name, rooms, root_files, root_says, functions, folders_skipped=(),
                 family_rooms=()):
        self.name = name                # "api"
        self.rooms = rooms              # lowest first
        self.top = len(rooms)           # the files at the house's root
        self.root_files = root_files    # None: any file may live at the root
        self.root_says = root_says      # what the root holds, for the messages
        self.functions = functions      # the regex of the house's function names
        self.skipped = folders_skipped  # folders of no C (server/www: the page's files)
        self.family_rooms = family_rooms  # rooms with a folder a family (api/endpoints)
        self.define = re.compile(r"^[A-Za-z_][\w \*]*?\b(%s)\s*\([^;{]*\)\s*\{" % functions,
                                 re.M)
        self.call = re.compile(r"\b(%s)\s*\(" % functions)
        self.include = re.compile(r'^\s*#\s*include\s+"(%s/[^"]+)\.(h|hh)"' % name, re.M)

    def rank_of(self, unit):
        """The room's height of <house>/<room>/<name> (or <house>/<room>/<family>/<name>
        in a room of families), top at the root; None outside."""
        parts = unit.split("/")
        if len(parts) == 2:
            return self.top
        if len(parts) == 3 and parts[1] in self.rooms:
            return self.rooms.index(parts[1])
        if len(parts) == 4 and parts[1] in self.family_rooms:
            return self.rooms.index(parts[1])
        return None


HOUSES = [
    House("api", ["i18n", "json", "render", "http", "request", "endpoints"],
          {"api.c", "api.h", "embedded.S", "openapi.yaml"}, "the router (api.c, api.h)",
          r"(?:api|jw)_\w+", family_rooms=("endpoints",)),
    House("server", ["host", "ops", "net", "codec", "lane"], None,
          "the wiring (main, daemon, exchange, record, reply, compute, admin, probe, www, state)", r"srv_\w+",
          folders_skipped=("www",)),
    # core/ has no rooms: one flat layer, in which no file reaches back to itself either.
    House("core", [], None, "its files", r"attn_\w+"),
]
SOURCE = (".c", ".cc", ".h")


def read_units(root, house):
    units, problems = {}, []
    base = os.path.join(root, house.name)
    for folder, subfolders, files in os.walk(base):
        if os.path.relpath(folder, base) == ".":
            subfolders[:] = [d for d in subfolders if d not in house.skipped]
        for name in sorted(files):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if not name.endswith(SOURCE):
                continue
            unit = re.sub(r"\.(c|cc|h)$", "", rel)
            if house.rank_of(unit) is None:
                problems.append("%s: not in a room; %s/ holds %s and %s"
                                % (rel, house.name, ", ".join(r + "/" for r in house.rooms),
                                   house.root_says))
                continue
            if rel.count("/") == 1 and house.root_files is not None \
                    and name not in house.root_files:
                problems.append("%s: only %s lives at %s/'s root; put it in a room"
                                % (rel, house.root_says, house.name))
            with open(path, encoding="utf-8", errors="replace") as f:
                units.setdefault(unit, []).append((rel, f.read()))
    return units, problems


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def read_edges(units, house):
    """unit -> {unit: (file, line, what)} for every include and call of another unit."""
    defined = {}
    for unit, files in units.items():
        for rel, text in files:
            if not rel.endswith(".h"):
                for m in house.define.finditer(strip_comments(text)):
                    defined.setdefault(m.group(1), set()).add(unit)
    edges = {u: {} for u in units}
    for unit, files in units.items():
        for rel, text in files:
            code = strip_comments(text)
            for m in house.include.finditer(code):
                target = m.group(1)
                if target in units and target != unit:
                    line = code.count("\n", 0, m.start()) + 1
                    edges[unit].setdefault(target, (rel, line, "includes %s.h" % target))
            for m in house.call.finditer(code if not rel.endswith(".h") else ""):
                owners = defined.get(m.group(1), set())
                if len(owners) == 1:
                    target = next(iter(owners))
                    if target != unit:
                        line = code.count("\n", 0, m.start()) + 1
                        edges[unit].setdefault(target, (rel, line, "calls %s (%s)"
                                                        % (m.group(1), target)))
    return edges


def upward(edges, house):
    out = []
    for unit in sorted(edges):
        for target, (rel, line, what) in sorted(edges[unit].items()):
            if house.rank_of(target) > house.rank_of(unit):
                out.append("%s:%d: %s, a room above %s/; doors open one way: %s"
                           % (rel, line, what, unit.rsplit("/", 1)[0],
                              " -> ".join(r + "/" for r in reversed(house.rooms))))
    return out


def cycles(edges, house):
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
        out.append("cycle of %d %s/ files: %s\n%s"
                   % (len(comp), house.name, ", ".join(comp), "\n".join(links)))
    return out


def hooks(units, house):
    """A room's test_hooks.h declares what the tests reach into (counters of the paths
    taken, switches that force one): the room's own files include it, to define them,
    and tests/; no other file may take them for API."""
    out = []
    for unit in sorted(units):
        for rel, text in units[unit]:
            code = strip_comments(text)
            for m in house.include.finditer(code):
                room = m.group(1).rsplit("/", 1)[0]
                if m.group(1).endswith("/test_hooks") and room != unit.rsplit("/", 1)[0]:
                    out.append("%s:%d: includes %s.h, which only tests/ and %s/'s own files "
                               "may include" % (rel, code.count("\n", 0, m.start()) + 1,
                                                m.group(1), room))
    return out


def lint(root, house):
    units, problems = read_units(root, house)
    edges = read_edges(units, house)
    problems += upward(edges, house) + cycles(edges, house) + hooks(units, house)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("%s rooms: %d violations above" % (house.name, len(problems)), file=sys.stderr)
        return False
    n_edges = sum(len(e) for e in edges.values())
    print("%s rooms: %d units, %d edges, none upward, no cycle"
          % (house.name, len(units), n_edges))
    return True


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    ok = [lint(root, house) for house in HOUSES]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
