// Unit tests of the pure logic (src/logic.ts), run by `npm test` with node's test runner.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  actionData,
  ActionData,
  askArguments,
  backoffMs,
  CrashCounter,
  effectiveModel,
  FineTuning,
  fineTuningBar,
  fineTuningLine,
  initializationOptions,
  modelLine,
  onlyKinds,
  pickAction,
  serverCommand,
  serverSettings,
  statusText,
  Wanted,
  WireAction,
  workspaceLine,
} from '../../src/logic';

const range = { start: { line: 4, character: 1 }, end: { line: 4, character: 1 } };
const data = (action: string, title: string, extra: Partial<ActionData> = {}): ActionData => ({
  action,
  title,
  uri: 'file:///p/calc_test.go',
  version: 3,
  range,
  ...extra,
});
// What the server lists on a failing test, in its table's order (lsp/actions.go).
const menu: WireAction[] = [
  { title: 'Fix: calc_test.go:8: Add(2, 3) = -1, want 5', kind: 'quickfix.frognano.fixDiagnostic', data: data('fix', 'Fix: calc_test.go:8: …') },
  { title: 'Fix failing test TestAdd', kind: 'quickfix.frognano.fixTest', data: data('fixTest', 'Fix failing test TestAdd', { test: 'TestAdd', func: 'TestAdd' }) },
  { title: 'Explain TestAdd', kind: 'source.frognano.explain', data: data('explain', 'Explain TestAdd', { func: 'TestAdd' }) },
  { title: 'Ask FrogNano…', kind: 'refactor.rewrite.frognano.ask', data: data('ask', 'Ask FrogNano…', { func: 'TestAdd' }) },
];

describe('pickAction', () => {
  test('earlier ids win over menu order', () => {
    assert.equal(pickAction(menu, Wanted.fix)?.title, 'Fix failing test TestAdd');
  });
  test('falls back to later ids', () => {
    assert.equal(pickAction(menu.filter((a) => a.kind !== 'quickfix.frognano.fixTest'), Wanted.fix)?.title, menu[0].title);
  });
  test('by kind, not by title', () => {
    // Titles are for people (translated, reworded); another server's action may share one.
    const retitled: WireAction[] = [
      { title: 'Fix failing test TestAdd', kind: 'quickfix', data: data('other', 'x') },
      { title: 'Repair TestAdd', kind: 'quickfix.frognano.fixTest', data: data('fixTest', 'Repair TestAdd') },
      { title: 'Explain TestAdd', kind: 'refactor', data: data('other', 'y') },
    ];
    assert.equal(pickAction(retitled, Wanted.fix)?.title, 'Repair TestAdd');
    assert.equal(pickAction(retitled, Wanted.explain), undefined);
  });
  test('the request asks the server for the wanted kinds only', () => {
    assert.deepEqual(onlyKinds(Wanted.fix), ['quickfix.frognano.fixTest', 'quickfix.frognano.fixDiagnostic', 'refactor.rewrite.frognano.implement']);
    assert.deepEqual(onlyKinds(Wanted.explain), ['source.frognano.explain']);
  });
  test('explain, ask, and nothing', () => {
    assert.equal(pickAction(menu, Wanted.explain)?.title, 'Explain TestAdd');
    assert.equal(pickAction(menu, Wanted.ask)?.title, 'Ask FrogNano…');
    assert.equal(pickAction(menu, Wanted.tests), undefined);
    assert.equal(pickAction(null, Wanted.fix), undefined);
    assert.equal(pickAction([], Wanted.fix), undefined);
  });
});

describe('actionData', () => {
  test('from data (clients that resolve)', () => {
    assert.equal(actionData(menu[1])?.test, 'TestAdd');
  });
  test('from the frognano.run command argument', () => {
    const d = data('explain', 'Explain this', { selection: 'x' });
    assert.deepEqual(actionData({ title: 'Explain this', command: { command: 'frognano.run', arguments: [d] } }), d);
  });
  test('none', () => {
    assert.equal(actionData({ title: 'Other' }), undefined);
    assert.equal(actionData({ title: 'Other', data: { foo: 1 } }), undefined);
  });
});

describe('askArguments', () => {
  test('adds the trimmed instruction and keeps the context', () => {
    const d = data('ask', 'Ask FrogNano…', { func: 'Add', selection: 'return a - b' });
    const [arg] = askArguments(d, '  make it add \n');
    assert.equal(arg.instruction, 'make it add');
    assert.equal(arg.func, 'Add');
    assert.equal(arg.selection, 'return a - b');
    assert.deepEqual(arg.range, range);
    assert.equal(d.instruction, undefined, 'the action itself is not changed');
  });
});

describe('settings', () => {
  const config = (v: Record<string, unknown>) => (k: string) => v[k];
  test('defaults leave everything to the server', () => {
    // package.json's defaults: empty strings and 0 mean "the server's default".
    const defaults = { path: 'frognano', ollamaHost: '', model: '', numCtx: 0, maxSteps: 100, maxMinutes: 30, actions: {}, whenBusy: 'reject', preview: true, watch: true };
    assert.deepEqual(initializationOptions(config(defaults)), { frognano: { maxSteps: 100, maxMinutes: 30, whenBusy: 'reject', preview: true, watch: true } });
  });
  test('set values pass through; extension-only keys do not', () => {
    const s = serverSettings(
      config({ path: '/x/frognano', trace: { server: 'verbose' }, ollamaHost: '127.0.0.1:9', model: 'fixer', numCtx: 16384, actions: { explain: false }, preview: false, whenBusy: 'queue', watch: false }),
    );
    assert.deepEqual(s, { ollamaHost: '127.0.0.1:9', model: 'fixer', numCtx: 16384, actions: { explain: false }, preview: false, whenBusy: 'queue', watch: false });
  });
  test('the model shown', () => {
    assert.equal(effectiveModel({ model: 'a' }, { FROGNANO_MODEL: 'b' }), 'a');
    assert.equal(effectiveModel({}, { FROGNANO_MODEL: 'b' }), 'b');
    assert.equal(effectiveModel({}, {}), 'frognano:4b');
  });
  test('server command', () => {
    assert.deepEqual(serverCommand(undefined, '/home/u'), { command: 'frognano', args: ['lsp'] });
    assert.deepEqual(serverCommand(' ', '/home/u'), { command: 'frognano', args: ['lsp'] });
    assert.deepEqual(serverCommand('~/bin/frognano', '/home/u'), { command: '/home/u/bin/frognano', args: ['lsp'] });
  });
});

describe('restart back-off', () => {
  test('doubles up to the cap', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 100].map((n) => backoffMs(n)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });
  test('gives up after repeated crashes, resets after a stable run', () => {
    let now = 0;
    const c = new CrashCounter(() => now, 3, 60_000);
    assert.deepEqual([c.crashed(), c.crashed(), c.crashed(), c.crashed()], [1000, 2000, 4000, undefined]);
    c.started();
    now += 60_000;
    assert.equal(c.crashed(), 1000);
  });
});

describe('statusText', () => {
  test('working while a run is active', () => {
    assert.match(statusText({ model: 'fixer', server: 'running', runs: ['FrogNano: Fix failing test TestAdd'] }).text, /working…/);
  });
  test('Ollama state from frognano/status', () => {
    const backend = { ollamaHost: 'http://127.0.0.1:11434', model: 'fixer', ollama: 'ok' as const, ollamaVersion: '0.17.4', modelPresent: true, running: [] };
    assert.match(statusText({ model: 'fixer', server: 'running', runs: [], backend }).tooltip, /Ollama 0\.17\.4 at http:\/\/127\.0\.0\.1:11434/);
    const down = statusText({ model: 'fixer', server: 'running', runs: [], backend: { ...backend, ollama: 'unreachable', problem: 'Ollama is not reachable at …' } });
    assert.match(down.text, /\$\(warning\) fixer: Ollama unreachable/);
    assert.equal(down.tooltip, 'Ollama is not reachable at …');
    assert.match(statusText({ model: 'fixer', server: 'running', runs: [], backend: { ...backend, modelPresent: false } }).text, /not installed/);
  });
  test('the fine-tuned model from frognano/status', () => {
    const backend = {
      ollamaHost: 'http://127.0.0.1:11434', model: 'frognano-ft-0123456789ab:step-3', ollama: 'ok' as const, ollamaVersion: '0.17.4', modelPresent: true, running: [],
      fineTuned: { model: 'frognano-ft-0123456789ab:step-3', step: 3, base: 'frognano:4b' },
    };
    const st = statusText({ model: 'frognano:4b', server: 'running', runs: [], backend });
    assert.equal(st.text, '$(hubot) frognano:4b · fine-tuned step 3');
    assert.match(st.tooltip, /^FrogNano server running, model frognano-ft-0123456789ab:step-3 \(fine-tuned from frognano:4b, step 3\), Ollama 0\.17\.4/);
    assert.equal(modelLine('frognano:4b', { ...backend, fineTuned: undefined }), 'frognano:4b');
  });
  test('fine-tuning while it runs, from frognano/status', () => {
    const fineTuning: FineTuning = { state: 'running', repo: '/r', pid: 42, iteration: 3, phase: 'train', fraction: 0.4, detail: 'step 2 of 5', inBand: 4, tasks: 9, iterations: 2, accepted: 1, heldOutNow: 0.55, heldOutStart: 0.4 };
    const backend = { ollamaHost: 'http://127.0.0.1:11434', model: 'fixer', ollama: 'ok' as const, ollamaVersion: '0.17.4', modelPresent: true, running: [], fineTuning };
    const st = statusText({ model: 'fixer', server: 'running', runs: [], backend });
    assert.equal(st.text, '$(hubot) fixer · fine-tuning: train 40%');
    assert.match(st.tooltip, /; fine-tuning: running \(pid 42\), iteration 3 train 40% step 2 of 5, held-out pass rate 55% \(40% at the start\)$/);
    assert.equal(statusText({ model: 'fixer', server: 'running', runs: [], backend: { ...backend, fineTuning: { ...fineTuning, state: 'stopped' } } }).text, '$(hubot) fixer');
  });
  test('model when running; error when stopped', () => {
    assert.match(statusText({ model: 'fixer', server: 'running', runs: [] }).text, /fixer/);
    assert.match(statusText({ model: 'fixer', server: 'failed', runs: [] }).text, /\$\(error\)/);
  });
});

describe('workspaceLine', () => {
  test('says nothing before a run started watching', () => {
    assert.equal(workspaceLine(undefined), undefined);
  });
  test('watching, with the HEAD', () => {
    assert.equal(
      workspaceLine({ watching: true, folders: 12, ready: true, commit: '0123456789abcdef0123', branch: 'main' }),
      'workspace: watching 12 folders, next copy ready, HEAD 0123456789ab on main',
    );
  });
  test('one folder', () => {
    assert.equal(workspaceLine({ watching: true, folders: 1 }), 'workspace: watching 1 folder, next copy being made');
  });
  test('not watched says why, detached HEAD', () => {
    assert.equal(
      workspaceLine({ watching: false, why: 'the inotify limit', commit: 'abc' }),
      'workspace: not watched (the inotify limit); each run compares the folder, HEAD abc (detached)',
    );
  });
});

describe('fineTuning', () => {
  const base: FineTuning = { state: 'off', repo: '/r', fraction: 0, inBand: 0, tasks: 0, iterations: 0, accepted: 0 };
  test('off says how to start; absent says nothing', () => {
    assert.equal(fineTuningLine(undefined), undefined);
    assert.match(fineTuningLine(base) ?? '', /^fine-tuning: off \("FrogNano: Start fine-tuning" starts it\)$/);
    assert.equal(fineTuningBar(base), undefined);
  });
  test('waiting, stopped, killed, failed', () => {
    assert.equal(fineTuningBar({ ...base, state: 'running', pid: 7, waiting: 'outside the hours 3-4' }), 'fine-tuning: waiting');
    assert.equal(fineTuningLine({ ...base, state: 'running', pid: 7, waiting: 'outside the hours 3-4' }), 'fine-tuning: running (pid 7), waiting: outside the hours 3-4');
    assert.equal(fineTuningLine({ ...base, state: 'stopped', ended: 'stopped at 01:14' }), 'fine-tuning: stopped (stopped at 01:14)');
    assert.equal(fineTuningLine({ ...base, state: 'stopped', lastError: 'rollouts: Ollama is down' }), 'fine-tuning: stopped (ended without a word: killed?), last error: rollouts: Ollama is down');
  });
});
