#!/usr/bin/python3
"""The message catalogue kept in step with the code (make lint).

Every sentence attnd says is an English printf format written where it is said: the
format of api_error_set, api_error_hint, api_error_add's detail and hint, and
api_respond_problem, api_respond_unavailable, any literal inside API_TR(...), API_N(...)
or API_JSON_N(...) (the JSON reader's sentences, with numbered holes), the server's
(server/*.c: api_respond_server_problem's and api_respond_server_reason's, and every
literal inside SRV_N(...)), and the meanings in tables of known fields (struct
api_field), which hints quote. api/i18n/messages_en.c lists them all, one a row: this
script reads the code's and the catalogue's, and fails naming each one the catalogue
lacks or holds without use. `--write` rewrites the catalogue from the code. The other
languages' tables are checked against the catalogue by tests/unit/check_lang.c.

A message argument is a literal, a marked literal (API_N, SRV_N, API_JSON_N), or a name
or table lookup that holds one. An expression that picks between literals (c ? "a" :
"b") is refused: this script could not see its sentences, so the catalogue would lack
them and they would reach every language in English. An optional first argument names
the tree to read (tests/lint/run.sh plants violations in a copy).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(next((a for a in sys.argv[1:] if not a.startswith("--")),
                         pathlib.Path(__file__).resolve().parent.parent))
CATALOGUE = ROOT / "api/i18n/messages_en.c"

# call name -> positions (0-based) of the arguments that are messages
CALLS = {
    "api_error_set": [2],
    "api_error_hint": [1],
    "api_error_add": [2, 3],
    "api_respond_problem": [2],
    "api_respond_unavailable": [1],
    "API_TR": [0],
    "api_tr": [0],
    "API_N": [0],
    # the server's own problems (api/http/server_problem.h), and the sentences it keeps
    # in tables or returns from its checks, marked SRV_N (server/ops/words.h)
    "api_respond_server_problem": [3],
    "api_respond_server_reason": [3],
    "SRV_N": [0],
    # the JSON reader's sentences, with numbered holes (api/json/read.h)
    "API_JSON_N": [0],
}
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
ONLY_CONVERSIONS = re.compile(r"^(%[-+ #0-9.]*[a-z]+|\s|[:;,.])*$")
MARKED = re.compile(r'\b(?:API_N|SRV_N|API_JSON_N)\s*\((?:\s*"(?:[^"\\\n]|\\.)*")+\s*\)')


def strip_comments(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            m = LITERAL.match(text, i)
            if m is None:
                out.append(text[i]); i += 1
            else:
                out.append(m.group(0)); i = m.end()
        elif text[i] == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1]); i = j + 1
        else:
            out.append(text[i]); i += 1
    return "".join(out)


def split_args(text, start):
    """The arguments of the call whose '(' is at start, as source text."""
    depth, args, cur, i = 0, [], [], start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            m = LITERAL.match(text, i)
            cur.append(m.group(0)); i = m.end(); continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append("".join(cur)); return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(cur)); cur = []; i += 1; continue
        cur.append(c); i += 1
    return args


def literal_value(arg):
    """The string an argument made only of adjacent literals spells, else None."""
    arg = arg.strip()
    pieces, pos = [], 0
    for m in LITERAL.finditer(arg):
        if arg[pos:m.start()].strip():
            return None
        pieces.append(m.group(1)); pos = m.end()
    if not pieces or arg[pos:].strip():
        return None
    return "".join(pieces)


def code_messages(hidden):
    """The messages the code says, by first place; hidden gets the arguments whose
    literals an expression chooses between."""
    found = {}
    for path in sorted([*(ROOT / "api").rglob("*.c"), *(ROOT / "api").rglob("*.h"),
                        *(ROOT / "server").rglob("*.c")]):
        if path.name.startswith("messages_"):
            continue
        text = strip_comments(path.read_text(encoding="utf-8"))
        field_meanings(text, f"{path.relative_to(ROOT)}", found)
        for m in re.finditer(r"\b(" + "|".join(CALLS) + r")\s*\(", text):
            if m.group(1) in ("API_TR", "api_tr", "SRV_N", "API_JSON_N") and text[max(0, m.start() - 7):m.start()].endswith("define "):
                continue
            args = split_args(text, m.end() - 1)
            for pos in CALLS[m.group(1)]:
                if pos < len(args):
                    value = literal_value(args[pos])
                    if value is not None and not ONLY_CONVERSIONS.match(value):
                        found.setdefault(value, f"{path.relative_to(ROOT)}")
                    elif value is None and LITERAL.search(MARKED.sub("", args[pos])):
                        line = text.count("\n", 0, m.start()) + 1
                        hidden.append(f"{path.relative_to(ROOT)}:{line}: {m.group(1)}'s message "
                                      "is chosen by an expression; mark each sentence API_N(...)")
    return found


FIELD_TABLE = re.compile(r"struct api_field\s+\w+\s*\[\]\s*=\s*\{")
FIELD_ROW = re.compile(r'\{\s*"(?:[^"\\\n]|\\.)*"\s*,((?:\s*"(?:[^"\\\n]|\\.)*")+)\s*\}')


def field_meanings(text, where, found):
    """The meanings in tables of known fields (struct api_field): said in hints."""
    for m in FIELD_TABLE.finditer(text):
        end = text.index("};", m.end())
        for row in FIELD_ROW.finditer(text, m.end(), end):
            value = literal_value(row.group(1))
            if value:
                found.setdefault(value, where)


def catalogue_messages():
    text = strip_comments(CATALOGUE.read_text(encoding="utf-8"))
    # The rows end at the brace that closes the table (split_args counts braces outside
    # strings), not at the first "};", which a message may hold.
    body = text[text.index("api_messages_en[] = {"):]
    return [literal_value(a) for a in split_args(body, body.index("{")) if a.strip()]


def write_catalogue(messages):
    rows = []
    for msg, where in messages.items():
        rows.append(f"    /* {where} */\n    \"{msg}\",")
    CATALOGUE.write_text(
        "/*\n * api/i18n/messages_en.c — every message attnd says, in English as the code writes it:\n"
        " * the keys of the other languages' tables (see messages.h). tools/lint_messages.py\n"
        " * keeps it in step with the code (make lint); tests/unit/check_lang.c checks that\n"
        " * every other table has each row.\n */\n#include \"api/i18n/messages.h\"\n\n"
        "const char *const api_messages_en[] = {\n" + "\n".join(rows) + "\n};\n\n"
        "const size_t api_messages_en_count = sizeof api_messages_en / sizeof api_messages_en[0];\n",
        encoding="utf-8")


def main():
    hidden = []
    code = code_messages(hidden)
    if "--write" in sys.argv:
        write_catalogue(code)
        return 0
    listed = catalogue_messages()
    missing = [m for m in code if m not in listed]
    stale = [m for m in listed if m not in code]
    for m in missing:
        print(f"messages: {code[m]} says \"{m}\", which api/i18n/messages_en.c lacks")
    for m in stale:
        print(f"messages: api/i18n/messages_en.c lists \"{m}\", which no code says")
    for h in hidden:
        print(f"messages: {h}")
    print(f"messages: {len(code)} in the code, {len(listed)} catalogued, "
          f"{len(missing)} missing, {len(stale)} stale")
    return 1 if missing or stale or hidden else 0


if __name__ == "__main__":
    sys.exit(main())
