// tests/browser/lib.mjs — what every browser test shares: Debian's chromium (never a
// downloaded browser) driven by playwright-core, launched headless in a fresh profile
// that is removed when the test file is done.

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
// No sandbox (tests run as root), and nothing that would reach another host.
export const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * A persistent context in a new profile directory: { ctx, close }. One profile per test
 * file, so a choice kept in localStorage (the language) lasts across that file's tests.
 */
export async function launchChromium(prefix = 'attnd-chromium-') {
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), prefix));
  let ctx;
  try {
    ctx = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 },
    });
  } catch (e) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw e;
  }
  return {
    ctx,
    async close() {
      await ctx.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
