// End-to-end test of the extension in real VS Code (code-server, the browser build of VS
// Code with the real extension host), driven through headless Chromium with playwright-core.
//
// It installs the .vsix into a fresh extensions folder, opens the sample project (a failing
// TestAdd), puts the cursor on the failing line, opens the quick-fix menu (Ctrl+.), picks
// "Fix failing test TestAdd", waits for the run's progress notification, applies the change
// in the refactor preview, and checks that calc.go's editor holds "return a + b".
//
// It does all that in Restricted Mode, against a hostile repository: workspace trust is on,
// the trust dialog is answered "No, I don't trust the authors", and the project's own
// .vscode/settings.json names another binary (frognano.path: a script that leaves a marker
// file when it runs), another Ollama (frognano.ollamaHost: a loopback port that counts
// connections) and turns the preview off. The user's settings name the real ones. The test
// fails if the marker appears, if anything connects to the decoy port, or if the change lands
// without the preview; the project's unrestricted frognano.actions ({"ask": false}) must
// still apply, which shows its settings file was read at all.
//
// Run it through run-e2e.sh, which installs what it needs. Environment:
//   CODE_SERVER           the code-server binary (run-e2e.sh sets it)
//   FROGNANO_VSIX         the packaged extension (run-e2e.sh sets it)
//   FROGNANO_BIN          the frognano binary the extension starts (`frognano lsp`)
//   OLLAMA_HOST, FROGNANO_MODEL, FROGNANO_NUM_CTX   the server's Ollama and model
//   FROGNANO_E2E_PROJECT  the sample project (the test works on a copy of it)
//   FROGNANO_E2E_OUT      where screenshots and logs go (default: a temporary folder)
//   FROGNANO_E2E_TIMEOUT  seconds for the whole run (default 300)
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (k, def) => {
  const v = process.env[k] ?? def;
  if (v === undefined || v === '') throw new Error(`${k} is not set (see the header of test/e2e.mjs)`);
  return v;
};
const codeServer = env('CODE_SERVER');
const vsix = env('FROGNANO_VSIX');
const frognano = env('FROGNANO_BIN');
const source = env('FROGNANO_E2E_PROJECT');
const out = env('FROGNANO_E2E_OUT', mkdtempSync(join(tmpdir(), 'frognano-e2e-out-')));
const deadline = Date.now() + Number(env('FROGNANO_E2E_TIMEOUT', '480')) * 1000;
mkdirSync(out, { recursive: true });

const t0 = Date.now();
const log = (msg) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const norm = (s) => (s ?? '').replace(/\u00a0/g, ' ');

/** Polls fn until it returns a truthy value, or throws what after ms. */
async function until(what, ms, fn, every = 250) {
  const end = Math.min(Date.now() + ms, deadline);
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(every);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// --- a fresh VS Code profile with the extension installed -------------------------------
// FROGNANO_E2E_WORK fixes the folder, so that the caller can make fine-tuning's registry for
// the project's path (FROGNANO_E2E_FINETUNED below) before the run.
const work = process.env.FROGNANO_E2E_WORK || mkdtempSync(join(tmpdir(), 'frognano-e2e-'));
mkdirSync(work, { recursive: true });
// A copy of the project: VS Code saves files a refactoring changed (files.refactoring.autoSave),
// and the caller's project stays as it was, ready for another run.
const project = join(work, 'project');
cpSync(source, project, { recursive: true });
const userData = join(work, 'user-data');
const extensions = join(work, 'extensions');
mkdirSync(join(userData, 'User'), { recursive: true });
const settings = {
  'security.workspace.trust.enabled': true, // the default; the project is not trusted (below)
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'update.mode': 'none',
  'git.enabled': false,
  'chat.commandCenter.enabled': false,
  'frognano.path': frognano,
  'frognano.trace.server': 'messages',
  'frognano.preview': true,
};
if (process.env.OLLAMA_HOST) settings['frognano.ollamaHost'] = process.env.OLLAMA_HOST;
if (process.env.FROGNANO_MODEL) settings['frognano.model'] = process.env.FROGNANO_MODEL;
if (process.env.FROGNANO_NUM_CTX) settings['frognano.numCtx'] = Number(process.env.FROGNANO_NUM_CTX);
writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));

// --- the repository's own settings, as a hostile repository would write them --------------
// frognano.path: a "binary" that leaves a marker, then runs the real one (so only the marker
// tells). frognano.ollamaHost: a port on loopback that counts who connects. Both are
// restricted settings: in Restricted Mode VS Code must hand the extension the user's values.
const marker = join(work, 'workspace-binary-ran');
const hostileBin = join(project, '.vscode', 'frognano');
mkdirSync(join(project, '.vscode'), { recursive: true });
writeFileSync(hostileBin, `#!/bin/sh\necho "$0 $*" >> '${marker}'\nexec '${frognano}' "$@"\n`);
chmodSync(hostileBin, 0o755);
let decoyConnections = 0;
const decoy = createServer((sock) => {
  decoyConnections++;
  sock.destroy();
});
await new Promise((r) => decoy.listen(0, '127.0.0.1', r));
const decoyHost = `127.0.0.1:${decoy.address().port}`;
writeFileSync(join(project, '.vscode', 'settings.json'), JSON.stringify({
  'frognano.path': hostileBin,
  'frognano.ollamaHost': decoyHost,
  'frognano.preview': false,
  'frognano.actions': { ask: false }, // not restricted: must still apply
}, null, 2));
/** Throws when the workspace's binary or Ollama was used. */
function checkHostile(when) {
  if (existsSync(marker)) throw new Error(`${when}: the workspace's frognano.path ran (${readFileSync(marker, 'utf8').trim()})`);
  if (decoyConnections > 0) throw new Error(`${when}: ${decoyConnections} connection(s) to the workspace's frognano.ollamaHost ${decoyHost}`);
}

log(`installing ${vsix}`);
const inst = spawnSync(codeServer, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix], { encoding: 'utf8' });
if (inst.status !== 0) throw new Error(`installing the extension failed:\n${inst.stdout}\n${inst.stderr}`);

const port = await freePort();
const config = join(work, 'config.yaml');
writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
const serverLog = join(out, 'code-server.log');
writeFileSync(serverLog, '');
const cs = spawn(
  codeServer,
  ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--user-data-dir', userData, '--extensions-dir', extensions, '--config', config, project],
  {
    detached: true, // its own process group: killed whole at the end
    stdio: ['ignore', 'pipe', 'pipe'],
    // The language server the extension starts inherits this: FROGNANO_E2E_LSP_CACHE is where it
    // finds fine-tuning's registry (its FROGNANO_CACHE), apart from the cache code-server is in.
    env: process.env.FROGNANO_E2E_LSP_CACHE ? { ...process.env, FROGNANO_CACHE: process.env.FROGNANO_E2E_LSP_CACHE } : process.env,
  },
);
for (const s of [cs.stdout, cs.stderr]) s.on('data', (b) => writeFileSync(serverLog, b, { flag: 'a' }));

let browser;
let page;
let failed = false;
try {
  const base = `http://127.0.0.1:${port}`;
  await until('code-server answering', 60_000, async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok);
  log(`code-server up on ${base}`);

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${base}/?folder=${encodeURIComponent(project)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  log('workbench loaded');

  // --- the trust dialog: "No, I don't trust the authors" (Restricted Mode) ------------------
  const statusbar = page.locator('.part.statusbar').first();
  const restricted = async () => norm(await statusbar.innerText().catch(() => '')).includes('Restricted Mode');
  // The status bar says Restricted Mode before the dialog shows: wait for the dialog itself
  // (a fresh profile always gets it: security.workspace.trust.startupPrompt "once").
  const dialog = page.locator('.monaco-dialog-box');
  const distrust = dialog.locator('.monaco-button', { hasText: /^No, I don.t trust the authors$/ });
  if (await distrust.first().waitFor({ timeout: 30_000 }).then(() => true, () => false)) {
    await page.screenshot({ path: join(out, 'trust.png') });
    await distrust.first().click();
    await dialog.first().waitFor({ state: 'hidden', timeout: 10_000 });
    log(`trust dialog: answered "No, I don't trust the authors"`);
  } else {
    log('no trust dialog within 30s');
  }
  await until('the Restricted Mode indicator in the status bar', 30_000, restricted);
  log('the folder is in Restricted Mode');

  const editorPart = page.locator('.part.editor').first();
  async function open(file) {
    await until(`${file} open`, 30_000, async () => {
      if (norm(await page.title()).startsWith(file)) return true; // the window title names the active editor
      await page.keyboard.press('Escape');
      await page.keyboard.press('Control+P');
      const input = page.locator('.quick-input-widget input');
      if (!(await input.isVisible().catch(() => false))) return false;
      await input.fill(file);
      await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 5000 }).catch(() => {});
      await page.keyboard.press('Enter');
      await sleep(500);
      return false;
    }, 500);
    await editorPart.locator('.monaco-editor .view-lines').first().waitFor();
  }
  const editorText = async () => norm(await editorPart.locator('.monaco-editor .view-lines').first().innerText().catch(() => ''));

  // --- the failing line of calc_test.go ---------------------------------------------------
  const test = readFileSync(join(project, 'calc_test.go'), 'utf8').split('\n');
  const line = test.findIndex((l) => /t\.(Fatalf|Errorf|Fatal|Error)\(/.test(l)) + 1;
  await open('calc_test.go');
  await editorPart.locator('.monaco-editor textarea').first().focus();
  await until(`cursor on line ${line}`, 20_000, async () => {
    await page.keyboard.press('Control+G');
    const input = page.locator('.quick-input-widget input');
    if (!(await input.isVisible().catch(() => false))) return false;
    await input.fill(':' + line); // Ctrl+G opens quick open in go-to-line mode (prefix ':')
    await page.keyboard.press('Enter');
    await sleep(300);
    return norm(await page.locator('.part.statusbar').first().innerText().catch(() => '')).includes(`Ln ${line},`);
  }, 500);
  log(`cursor on calc_test.go:${line}`);

  // --- Ctrl+. until the server's quick fix is offered ---------------------------------------
  const menu = page.locator('.action-widget');
  const want = 'Fix failing test TestAdd';
  // A minute from here, not from the start: at load 18 the extension was activated 46 s in,
  // and its item was not yet drawn at t0 + 60 s.
  const looking = Date.now();
  await until(`"${want}" in the quick-fix menu`, 90_000, async () => {
    checkHostile('waiting for the quick fix');
    // The extension's status-bar item shows the model (or "FrogNano" when the server failed).
    const bar = norm(await statusbar.innerText().catch(() => ''));
    if (Date.now() - looking > 60_000 && !bar.includes(process.env.FROGNANO_MODEL || 'frognano:4b') && !bar.includes('FrogNano')) {
      throw new Error('no FrogNano status-bar item a minute after the file opened: the extension is not active (disabled in Restricted Mode?)');
    }
    await page.keyboard.press('Control+.');
    try {
      await menu.waitFor({ state: 'visible', timeout: 3000 });
    } catch {
      return false;
    }
    await sleep(300);
    if (norm(await menu.innerText().catch(() => '')).includes(want)) return true;
    await page.keyboard.press('Escape'); // the provider had not registered yet: try again
    await sleep(1000);
    return false;
  }, 0);
  const items = norm(await menu.innerText());
  log(`menu: ${items.split('\n').filter(Boolean).join(' | ')}`);
  await page.screenshot({ path: join(out, 'menu.png') });
  checkHostile('the quick fix was offered');
  if (items.includes('Ask FrogNano')) throw new Error('"Ask FrogNano…" offered: the workspace\'s frognano.actions {"ask": false} was not applied');

  // --- pick it; the server runs the agent with progress --------------------------------------
  // By keyboard, as a user would: the menu's pointer block swallows synthetic clicks.
  for (let i = 0; ; i++) {
    const focused = norm(await menu.locator('.monaco-list-row.focused').first().getAttribute('aria-label').catch(() => ''));
    if (focused.startsWith(want)) break;
    if (i > 10) throw new Error(`could not focus "${want}" in the menu (focused: "${focused}")`);
    await page.keyboard.press('ArrowDown');
    await sleep(150);
  }
  await page.keyboard.press('Enter');
  log(`picked "${want}"`);
  const toast = page.locator('.notification-toast', { hasText: 'FrogNano' });
  const applyButton = page.locator('.monaco-button', { hasText: /^Apply$/ });
  let sawProgress = false;
  await until('the progress notification', 60_000, async () => {
    const status = norm(await page.locator('.part.statusbar').first().innerText().catch(() => ''));
    sawProgress = (await toast.isVisible().catch(() => false)) || status.includes('working…');
    // A very quick run may end before we look: the preview then proves it ran.
    return sawProgress || (await applyButton.isVisible().catch(() => false));
  }, 100);
  if (sawProgress) {
    log(`progress: ${norm(await toast.first().innerText().catch(() => '')).replace(/\n/g, ' ')}`);
    await page.screenshot({ path: join(out, 'progress.png') });
  }

  // --- the change: applied in the refactor preview (frognano.preview), then checked --------
  let applied = false;
  let endedAt = 0;
  const failure = page.locator('.notification-toast').filter({ hasText: 'FrogNano' }).filter({ hasText: /failed|stopped|cancelled/ });
  await until('the change to land', 300_000, async () => {
    if (await applyButton.isVisible().catch(() => false)) {
      // VS Code lists edits that need confirmation unchecked: tick the file, then Apply.
      const boxes = page.locator('.part.panel input[type=checkbox]');
      for (let i = 0; i < (await boxes.count()); i++) {
        if (!(await boxes.nth(i).isChecked())) await boxes.nth(i).click();
        await sleep(200);
      }
      await page.screenshot({ path: join(out, 'preview.png') });
      await applyButton.first().click();
      log('clicked Apply in the refactor preview');
      applied = true;
      await sleep(500);
      return true;
    }
    if (await failure.isVisible().catch(() => false)) throw new Error(`the run failed: ${norm(await failure.first().innerText())}`);
    // Without a preview the edit lands directly: done a few seconds after the run ended.
    const working = norm(await page.locator('.part.statusbar').first().innerText().catch(() => '')).includes('working…');
    if (!working && !endedAt) endedAt = Date.now();
    if (working) endedAt = 0;
    return endedAt && Date.now() - endedAt > 5000;
  }, 500);
  if (!applied) throw new Error('the change landed without the refactor preview: the workspace\'s frognano.preview: false was applied');
  checkHostile('the change landed');
  await open('calc.go');
  const text = await until('calc.go to hold "return a + b"', 20_000, async () => {
    const t = await editorText();
    return t.includes('return a + b') && t;
  });
  await page.screenshot({ path: join(out, 'result.png') });
  log(`calc.go in the editor:\n${text}`);
  const disk = readFileSync(join(project, 'calc.go'), 'utf8');
  log(`calc.go on disk: ${disk.includes('return a + b') ? 'saved with the fix (files.refactoring.autoSave)' : 'not saved yet'}`);
  // --- the model in the status bar: FROGNANO_E2E_FINETUNED names the fine-tuned model (step 1 of
  // FROGNANO_MODEL) that the caller's registry has in use, and the bar says so once the run is over.
  const fineTuned = process.env.FROGNANO_E2E_FINETUNED;
  const model = process.env.FROGNANO_MODEL ?? '';
  if (fineTuned) {
    const want = `${model} · fine-tuned step 1`;
    const bar = await until(`"${want}" in the status bar`, 60_000, async () => {
      const t = norm(await statusbar.innerText().catch(() => ''));
      return t.includes(want) && t;
    }, 500);
    log(`status bar: ${bar.replace(/\n/g, ' | ')}`);
  }
  const modelLine = fineTuned ? `model: ${fineTuned} (fine-tuned from ${model}, step 1)` : `model: ${model}`;
  // --- an extension command from the palette: FrogNano: Show status ------------------------
  await until('"FrogNano: Show status" to answer', 30_000, async () => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    if (!(await input.isVisible().catch(() => false))) return false;
    await input.fill('>FrogNano: Show status');
    await sleep(500);
    await page.keyboard.press('Enter');
    const status = page.locator('.notification-toast', { hasText: 'server: running' });
    await status.first().waitFor({ timeout: 5000 }).catch(() => {});
    const text = norm(await status.first().innerText().catch(() => ''));
    if (text) log(`status: ${text.replace(/\n/g, ' ')}`);
    return text.includes(modelLine);
  }, 500);
  await page.screenshot({ path: join(out, 'status.png') });

  // --- fine-tuning: FROGNANO_E2E_DAEMON_PID is a real daemon the caller started for the project
  // (waiting for its hours): the bar and Show status show it; Stop ends it; Start without the
  // weights setting names the setting; Show report writes the page and has it opened. --------
  const daemonPid = process.env.FROGNANO_E2E_DAEMON_PID;
  if (daemonPid) {
    const palette = async (title, done) => until(`"${title}" from the palette`, 60_000, async () => {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      if (!(await input.isVisible().catch(() => false))) return false;
      await input.fill('>' + title);
      await sleep(500);
      await page.keyboard.press('Enter');
      return until(`the outcome of "${title}"`, 20_000, done, 250).catch(() => false);
    }, 500);
    const toastWith = async (text) => {
      const t = page.locator('.notification-toast', { hasText: text });
      return (await t.first().isVisible().catch(() => false)) && norm(await t.first().innerText().catch(() => ''));
    };
    const bar = await until('fine-tuning in the status bar', 60_000, async () => {
      const t = norm(await statusbar.innerText().catch(() => ''));
      return t.includes('fine-tuning: waiting') && t;
    }, 500);
    log(`status bar with fine-tuning: ${bar.replace(/\n/g, ' | ')}`);
    await page.screenshot({ path: join(out, 'finetune-bar.png') });
    const running = await palette('FrogNano: Show status', () => toastWith(`fine-tuning: running (pid ${daemonPid})`));
    log(`status: ${running.replace(/\n/g, ' ')}`);
    const stopped = await palette('FrogNano: Stop fine-tuning', () => toastWith('stopped fine-tuning of'));
    log(`stop: ${stopped.replace(/\n/g, ' ')}`);
    const noWeights = await palette('FrogNano: Start fine-tuning', () => toastWith('frognano.finetune.weights'));
    log(`start: ${noWeights.replace(/\n/g, ' ')}`);
    await page.screenshot({ path: join(out, 'finetune-start.png') });
    // The output channel's log file keeps the report's path (ctx.ts, showDocument middleware).
    const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
    const reportPath = await palette('FrogNano: Show fine-tuning report', async () => {
      if (!existsSync(join(userData, 'logs'))) return false;
      for (const f of walk(join(userData, 'logs')).filter((f) => /FrogNano/.test(f))) {
        const m = readFileSync(f, 'utf8').match(/fine-tuning report: (\S+index\.html)/);
        if (m) return m[1];
      }
      return false;
    });
    log(`report: ${reportPath}`);
  }
  checkHostile('the end');
  log(`Restricted Mode: the user's binary ran, no connection to the workspace's Ollama ${decoyHost}, the preview was shown`);
  log(`screenshots: ${['trust.png', 'menu.png', 'progress.png', 'preview.png', 'result.png', 'status.png'].filter((f) => existsSync(join(out, f))).map((f) => join(out, f)).join(' ')}`);
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e?.stack ?? e}`);
  if (page) await page.screenshot({ path: join(out, 'failure.png') }).catch(() => {});
  dumpLogs();
} finally {
  await browser?.close().catch(() => {});
  decoy.close();
  try {
    process.kill(-cs.pid, 'SIGTERM');
    await sleep(1500);
    process.kill(-cs.pid, 'SIGKILL');
  } catch {}
}

// The FrogNano output channel and the extension host's log, for a failed run.
function dumpLogs() {
  const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
  const logs = existsSync(join(userData, 'logs')) ? walk(join(userData, 'logs')) : [];
  for (const f of logs.filter((f) => /FrogNano|exthost\.log|remoteexthost\.log/.test(f))) {
    const body = readFileSync(f, 'utf8');
    console.error(`--- ${f} (last 4000 chars)\n${body.slice(-4000)}`);
  }
  console.error(`--- ${serverLog} (last 2000 chars)\n${readFileSync(serverLog, 'utf8').slice(-2000)}`);
}

console.log(failed ? '0 passed, 1 failed' : '1 passed, 0 failed');
process.exit(failed ? 1 : 0);
