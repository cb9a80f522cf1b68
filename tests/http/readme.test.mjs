// tests/http/readme.test.mjs — every example in README.md and docs/*.md is run and its
// output compared.
//
// An example is a ```console block: lines starting with "$ " are a shell command
// (a trailing backslash continues it), the lines up to the next command are its
// expected output. localhost:8080 is rewritten to the test server's port, so the
// pages show what a user types after `make run`. Each example's test is named by its file.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { startServer } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const pages = ['README.md', ...readdirSync(path.join(root, 'docs'))
  .filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const readPage = (page) => readFileSync(path.join(root, page), 'utf8');
const readme = readPage('README.md');

function examples(text) {
  const found = [];
  for (const block of text.matchAll(/^```console\n([\s\S]*?)^```$/gm)) {
    let current = null;
    let continuing = false;
    for (const line of block[1].split('\n')) {
      if (continuing) {
        current.command += '\n' + line;
        continuing = line.endsWith('\\');
      } else if (line.startsWith('$ ')) {
        current = { command: line.slice(2), output: [] };
        found.push(current);
        continuing = line.endsWith('\\');
      } else if (current) {
        current.output.push(line);
      }
    }
  }
  return found.map((e) => ({ command: e.command, output: e.output.join('\n').trimEnd() }));
}

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.stop();
});

const list = examples(readme);
test('the README has curl examples', () => {
  assert.ok(list.length >= 5, `only ${list.length} examples found`);
});

for (const page of pages) {
  for (const [i, ex] of examples(readPage(page)).entries()) {
    test(`${page} example ${i + 1}: ${ex.command.split('\n')[0].slice(0, 70)}`, () => {
      const command = ex.command.replaceAll('localhost:8080', `127.0.0.1:${server.port}`);
      const out = execFileSync('bash', ['-c', command], { encoding: 'utf8', timeout: 10000 });
      assert.equal(out.trimEnd(), ex.output);
    });
  }
}

// The README's `make help` block is what `make help` prints: the Makefile's ## lines are
// the one place the targets are described.
test('the README shows what `make help` prints', () => {
  const block = readme.match(/`make help` lists\s+every target[^\n]*\n\n```\n([\s\S]*?)```/);
  assert.ok(block, 'the README has its make help block');
  const printed = execFileSync('make', ['-s', '--no-print-directory', 'help'],
    { cwd: root, encoding: 'utf8', timeout: 10000 });
  assert.equal(block[1], printed);
});
