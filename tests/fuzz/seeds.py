#!/usr/bin/python3
"""tests/fuzz/seeds.py — writes the fuzzers' seed corpora, derived from the sources.

    tests/fuzz/seeds.py OUTDIR

OUTDIR/api gets, for fuzz_api:
  - every request body of the unit suites, tests/unit/ (the bad_cases table of
    check_attention.c included, every bad input the tests already know) and every `curl -d` body of README.md and docs/*.md, as a
    bare body (POST /v1/attention) and as a body for each other POST route;
  - for every route of api/api.c's table (and every problem page of api/http/problem.c):
    each method, several Accept headers, ?format values and Content-Types, in the
    harness's HTTP-like form (see fuzz_api.c).
The hand-written seeds and regressions of tests/fuzz/corpus/NAME are committed and
given to the fuzzers beside these (tests/fuzz/run.sh).
OUTDIR/reader gets the same bodies, bare, for fuzz_reader, and a few of its own;
OUTDIR/numfmt gets the doubles of check_numfmt.c's printing table and edge cases;
OUTDIR/render, shapes with the seeds' weights and labels for fuzz_render.
OUTDIR/v2 gets, for fuzz_v2, every V2 inference body of README.md and docs/*.md (`curl
.../v2/models/MODEL/infer ... -d '...'`), the model in its first byte as fuzz_v2.c reads
it, sent without and with a header length; and the same bodies' JSON headers for the
verify model with a binary FP16 candidate after them.

Derived rather than committed, so the corpus follows the tests and the route table
as they grow. Uses only the standard library (Debian's python3).
"""
import os
import re
import struct
import sys
import hashlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TOKEN = re.compile(rb'"((?:[^"\\\n]|\\.)*)"|([A-Za-z_][A-Za-z0-9_]*)|(\s+)|(.)', re.S)


def strip_comments(src):
    """Removes /* */ and // comments outside string and character literals."""
    out, i, n = bytearray(), 0, len(src)
    while i < n:
        c = src[i:i + 1]
        if c in (b'"', b"'"):
            j = i + 1
            while j < n and src[j:j + 1] != c:
                j += 2 if src[j:j + 1] == b'\\' else 1
            out += src[i:j + 1]
            i = j + 1
        elif src.startswith(b'/*', i):
            i = src.index(b'*/', i) + 2
            out += b' '
        elif src.startswith(b'//', i):
            i = src.index(b'\n', i)
        else:
            out += c
            i += 1
    return bytes(out)


def unescape(lit):
    """The bytes of a C string literal's contents."""
    out, i = bytearray(), 0
    simple = {b'n': b'\n', b't': b'\t', b'r': b'\r', b'"': b'"', b'\\': b'\\', b"'": b"'",
              b'0': b'\0', b'a': b'\a', b'b': b'\b', b'f': b'\f', b'v': b'\v', b'?': b'?'}
    while i < len(lit):
        c = lit[i:i + 1]
        if c != b'\\':
            out += c
            i += 1
            continue
        e = lit[i + 1:i + 2]
        if e == b'x':
            m = re.match(rb'[0-9A-Fa-f]+', lit[i + 2:])
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        else:
            out += simple[e]
            i += 2
    return bytes(out)


def string_runs(src, macros):
    """Every maximal run of adjacent string literals and string macros: (offset, bytes)."""
    runs, cur, start = [], None, 0
    for m in TOKEN.finditer(src):
        lit, ident, space = m.group(1), m.group(2), m.group(3)
        if space is not None:
            continue
        piece = unescape(lit) if lit is not None else macros.get(ident) if ident else None
        if piece is None:
            if cur is not None:
                runs.append((start, cur))
            cur = None
            continue
        if cur is None:
            cur, start = b'', m.start()
        cur += piece
    if cur is not None:
        runs.append((start, cur))
    return runs


def unit_sources():
    """The unit suites' sources as one text, the shared fixture (its macros) first."""
    unit = os.path.join(ROOT, 'tests', 'unit')
    names = sorted(f for f in os.listdir(unit) if f.endswith(('.c', '.h')))
    names.sort(key=lambda f: not f.endswith('.h'))
    return b'\n'.join(open(os.path.join(unit, f), 'rb').read() for f in names)


def unit_bodies():
    src = strip_comments(unit_sources())
    macros = {}
    for m in re.finditer(rb'#define\s+(\w+)\s+((?:"(?:[^"\\\n]|\\.)*"\s*)+)\n', src):
        macros[m.group(1).decode()] = b''.join(
            unescape(s) for s in re.findall(rb'"((?:[^"\\\n]|\\.)*)"', m.group(2)))
    bodies = []
    # The bad_cases table: the first string of each entry is the body, even "" or "42".
    t = re.search(rb'bad_cases\[\]\s*=\s*\{(.*?)\n\};', src, re.S)
    if t:
        for entry in re.finditer(rb'\{\s*((?:"(?:[^"\\\n]|\\.)*"|\w+)(?:\s*(?:"(?:[^"\\\n]|\\.)*"|\w+))*)\s*,',
                                 t.group(1)):
            runs = string_runs(entry.group(1), macros)
            if runs:
                bodies.append(runs[0][1])
    # Any other JSON object literal in the file (request bodies of the other tests).
    for _, run in string_runs(src, macros):
        if run.startswith(b'{') and run.rstrip().endswith(b'}'):
            bodies.append(run)
    return bodies


def readme_bodies():
    pages = ['README.md'] + sorted(os.path.join('docs', f) for f in os.listdir(os.path.join(ROOT, 'docs'))
                                   if f.endswith('.md'))
    text = b''.join(open(os.path.join(ROOT, p), 'rb').read() for p in pages)
    return [m.group(1) for m in re.finditer(rb"curl [^\n]*?-d '([^']*)'", text)]


def routes():
    """(path, is_prefix, methods, takes_body) from api/api.c's route table."""
    src = open(os.path.join(ROOT, 'api/api.c'), 'rb').read()
    out = []
    for m in re.finditer(rb'\{\s*"(/[^"]*)",\s*(true|false),\s*([A-Z_| ]+),\s*(true|false)', src):
        methods = [x.strip()[2:].decode() for x in m.group(3).split(b'|')]
        out.append((m.group(1).decode(), m.group(2) == b'true', methods, m.group(4) == b'true'))
    return out


def problem_slugs():
    src = open(os.path.join(ROOT, 'api/http/problem.c'), 'rb').read()
    return [s.decode() for s in re.findall(rb'\]\s*=\s*\{\s*"([a-z-]+)"', src)]


def write(outdir, data):
    os.makedirs(outdir, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(outdir, name), 'wb') as f:
        f.write(data)


def api_seeds(outdir):
    rs = routes()
    post_routes = [p for p, pre, ms, body in rs if body and 'POST' in ms]
    bodies = unit_bodies() + readme_bodies()
    for body in bodies:
        write(outdir, body)  # bare: POST /v1/attention
        for path in post_routes:
            write(outdir, b'POST ' + path.encode() + b'\nContent-Type: application/json\n\n' + body)
    # A batch of bodies, when the batch route exists.
    if '/v1/attention/batch' in post_routes:
        objs = [b for b in bodies if b.startswith(b'{')][:8]
        write(outdir, b'POST /v1/attention/batch\n\n{"items":[' + b','.join(objs) + b']}')
    accepts = [None, '*/*', 'application/json', 'text/plain', 'image/svg+xml', 'image/png',
               'text/html, application/json;q=0.9', 'application/json;q=0', 'text/*']
    formats = [None, 'json', 'text', 'svg', 'xml', '']
    ctypes = [None, 'application/json', 'text/plain; charset=utf-8',
              'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data']
    methods = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']
    sample = b'{"q":[[1,0,1,0],[0,1,0,1]],"k":[[1,0,1,0],[1,1,1,1]],"v":[[10,0],[0,10]]}'
    targets = []
    for path, prefix, _, _ in rs:
        if prefix:
            targets += [path + s for s in problem_slugs()] + [path + 'no-such-type', path]
        else:
            targets.append(path)
    targets += ['/', '/v2/nothing', '/v1/attention/', '/v1/shapes?n=10&d_model=512&heads=8',
                '/v1/shapes?n=10&d_model=512&heads=8&n_kv=4&kv_heads=2', '/v1/shapes?n=x']
    for target in targets:
        for method in methods:
            for accept in accepts if method in ('GET', 'POST') else [None]:
                head = f'{method} {target}\n'
                if accept:
                    head += f'Accept: {accept}\n'
                body = b'' if method in ('GET', 'HEAD') else sample
                write(outdir, head.encode() + b'\n' + body)
        sep = '&' if '?' in target else '?'
        # The same routes in Korean: every message through the Korean table's formats.
        write(outdir, f'POST {target}\nAccept-Language: ko-KR,ko;q=0.9\n\n'.encode() + sample)
        write(outdir, f'GET {target}{sep}lang=ko\n\n'.encode())
        for fmt in formats:
            if fmt is not None:
                write(outdir, f'POST {target}{sep}format={fmt}\n\n'.encode() + sample)
                write(outdir, f'GET {target}{sep}format={fmt}\n\n'.encode())
        for ct in ctypes:
            head = f'POST {target}\n' + (f'Content-Type: {ct}\n' if ct else '')
            write(outdir, head.encode() + f'Content-Length: {len(sample)}\n\n'.encode() + sample)
    # The context's knobs: small limits, a declared length over the limit, shutting down.
    write(outdir, b'POST /v1/attention\nX-Max-Cells: 3\n\n{"q":[[1],[2]],"k":[[1],[2]],"v":[[1],[2]]}')
    write(outdir, b'POST /v1/attention\nX-Max-Body: 10\nContent-Length: 11\n\n' + sample)
    write(outdir, b'POST /v1/attention\nX-Max-Body: 10\n\n' + sample)
    write(outdir, b'GET /readyz\nX-Not-Ready: 1\n\n')


def reader_seeds(outdir):
    """The request bodies of api_seeds, bare, and a few cut by hand at the middle."""
    for body in unit_bodies() + readme_bodies():
        write(outdir, body)
    write(outdir, b'{"a": [[1, 2], [3, 4]], "b": "], {\\"", "c": [5, [6]], "d": {}}')
    write(outdir, b'{"q": [[1,0],[0,1],[1,1]], "q": [[2]]}')


def numfmt_seeds(outdir):
    src = open(os.path.join(ROOT, 'tests/unit/check_numfmt.c')).read()
    xs = [0.1, 1 / 3, 1e-7, 5.0, -0.0, 0.0, 1e300, 5e-324, 2.2250738585072014e-308,
          1.7976931348623157e308, 1e16, 1e15, 9007199254740993.0, 0.0001, 0.00001, 2.675,
          float('inf'), float('-inf'), float('nan'), 1e22, 1e23, 123.456, -1.5]
    for m in re.finditer(r'\{\s*([-+0-9.e]+)\s*,\s*"', src):
        try:
            xs.append(float(m.group(1)))
        except ValueError:
            pass
    for i, x in enumerate(xs):
        write(outdir, struct.pack('<d', x) + bytes([i % 16]))


def render_seeds(outdir):
    """Shapes, the seeds' weights and labels (Korean, CJK, combining marks, long ones,
    bidi and other format controls)."""
    weights = [0.5, 0.5, 0.2689414213699951, 0.7310585786300049, 0.4573, 0.1682, 0.3744,
               0.0, 1.0, 1e-300, float('inf'), float('-inf'), float('nan'), -0.0, 1e308]
    labels = ['Q1\nQ2\nQ3\n사과\n사람\n과일', '注意\n力\ne\u0301t\u00e9\n' + 'x' * 40,
              'a\tb\nc\x07d\n\u200b\n\U0001F600\n', '',
              '\u202eevil\na\u200fb\n\u2066x\u2069\n\ufeff\u00ad\n\u0085\x7f\n사람\u202e과일\n'
              '\U000e0041\u2028\u061c' + 'y' * 20 + '\u200e']
    for i, (r, c) in enumerate([(2, 2), (3, 3), (1, 3), (24, 24), (5, 1), (20, 7)]):
        cells = b''.join(struct.pack('<d', weights[(i + j) % len(weights)]) for j in range(r * c))
        for flags in (0, 0x0f, 0x3f, 0xff):
            head = bytes([r - 1, c - 1, (i * 2) % 16, flags, 100 if i % 2 else 0])
            write(outdir, head + cells + labels[i % len(labels)].encode())


# fuzz_v2.c's first byte: bit 0 multihead, bit 5 verify (else attention); bits 3-4 = 1,
# the header length in bytes 1-2.
V2_MODEL_BITS = {'attention': 0, 'multihead': 1, 'verify': 32}


def v2_bodies():
    """(model, body) of every V2 inference example in README.md and docs/*.md."""
    pages = ['README.md'] + sorted(os.path.join('docs', f) for f in os.listdir(os.path.join(ROOT, 'docs'))
                                   if f.endswith('.md'))
    text = b''.join(open(os.path.join(ROOT, p), 'rb').read() for p in pages)
    return [(m.group(1).decode(), m.group(2))
            for m in re.finditer(rb"curl [^\n]*?/v2/models/(\w+)/infer[^\n]*?-d '([^']*)'", text)]


def v2_seeds(outdir):
    for model, body in v2_bodies():
        if model not in V2_MODEL_BITS:
            continue
        mode = V2_MODEL_BITS[model]
        write(outdir, bytes([mode, 0, 0]) + body)
        write(outdir, bytes([mode | 8]) + struct.pack('>H', len(body)) + body)
    # verify with a binary candidate: Q, K, V as JSON data, OUTPUT as 4 FP16 numbers
    header = (b'{"inputs":[{"name":"Q","shape":[2,2],"datatype":"FP64","data":[1,0,0,1]},'
              b'{"name":"K","shape":[2,2],"datatype":"FP64","data":[1,0,1,1]},'
              b'{"name":"V","shape":[2,2],"datatype":"FP64","data":[1,2,3,4]},'
              b'{"name":"OUTPUT","shape":[2,2],"datatype":"FP16",'
              b'"parameters":{"binary_data_size":8}}],'
              b'"outputs":[{"name":"VERDICT","parameters":{"binary_data":true}},'
              b'{"name":"REPORT","parameters":{"binary_data":true}},{"name":"GOLD"}]}')
    candidate = struct.pack('<4H', 0x3c00, 0x7e00, 0x4200, 0xfc00)  # 1, NaN, 3, -inf
    write(outdir, bytes([32 | 8]) + struct.pack('>H', len(header)) + header + candidate)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    api_seeds(os.path.join(out, 'api'))
    reader_seeds(os.path.join(out, 'reader'))
    numfmt_seeds(os.path.join(out, 'numfmt'))
    render_seeds(os.path.join(out, 'render'))
    v2_seeds(os.path.join(out, 'v2'))
    for d in sorted(os.listdir(out)):
        print(f'{d}: {len(os.listdir(os.path.join(out, d)))} seeds')


if __name__ == '__main__':
    main()
