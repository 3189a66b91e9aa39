// The extension's pure logic: no `vscode` import, so `npm test` runs it under plain Node.
// Everything here takes explicit inputs; the editor-facing files pass them in.
import { ActionId, ActionKinds, serverKeys, ServerSettings } from './server.gen';

export { ActionKinds };
export type { ActionId, ServerSettings };

/** What the server's code actions carry (lsp/actions.go actionData), and what frognano.run takes. */
export interface ActionData {
  action: string;
  title: string;
  uri: string;
  version: number;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  diagnostic?: string;
  func?: string;
  test?: string;
  testCommand?: string;
  selection?: string;
  instruction?: string;
}

/** A code action as it comes over the wire: data when the client resolves, else a command. */
export interface WireAction {
  title: string;
  kind?: string;
  data?: unknown;
  command?: { command: string; arguments?: unknown[] };
}

/** The server's commands (lsp/command.go). */
export const Commands = {
  run: 'frognano.run',
  ask: 'frognano.ask',
  cancel: 'frognano.cancel',
  finetuneStart: 'frognano.finetune.start',
  finetuneStop: 'frognano.finetune.stop',
  finetuneReport: 'frognano.finetune.report',
} as const;

/** frognano.finetune.report's result: the page, and whether the server had the client show it. */
export interface ReportResult {
  repo: string;
  path: string;
  shown: boolean;
}

/**
 * The actions each editor command runs, in order of preference, by id. Actions are picked by
 * their kind (generated from the server's table: server.gen.ts), never by title, which is
 * for people and may change.
 */
export const Wanted = {
  fix: ['fixTest', 'fix', 'implement'],
  explain: ['explain'],
  tests: ['tests'],
  ask: ['ask'],
} as const satisfies Record<string, readonly ActionId[]>;

/** The first action of one of the wanted ids' kinds (earlier ids win over the menu's order). */
export function pickAction<A extends WireAction>(actions: readonly A[] | null | undefined, ids: readonly ActionId[]): A | undefined {
  for (const id of ids) {
    const hit = (actions ?? []).find((a) => a.kind === ActionKinds[id]);
    if (hit) return hit;
  }
  return undefined;
}

/** The kinds of the wanted ids: the request's "only", so that the server lists only those. */
export function onlyKinds(ids: readonly ActionId[]): string[] {
  return ids.map((id) => ActionKinds[id]);
}

/** The action's data: its data field, or the argument of its frognano.run command. */
export function actionData(a: WireAction): ActionData | undefined {
  const d = a.data ?? a.command?.arguments?.[0];
  if (d && typeof d === 'object' && typeof (d as ActionData).action === 'string') return d as ActionData;
  return undefined;
}

/** The arguments of frognano.ask: the Ask action's data plus the user's instruction. */
export function askArguments(data: ActionData, instruction: string): [ActionData] {
  return [{ ...data, instruction: instruction.trim() }];
}

/**
 * The server's settings from the "frognano" section, read through get. Empty strings and
 * zero numbers mean "the server's default" (which honours its environment: OLLAMA_HOST,
 * FROGNANO_MODEL, FROGNANO_NUM_CTX), so they are left out; keys that belong to the
 * extension only (path, trace) never reach the server.
 */
export function serverSettings(get: (key: string) => unknown): ServerSettings {
  const out: Record<string, unknown> = {};
  for (const k of serverKeys) {
    const v = get(k);
    if (v === undefined || v === null || v === '') continue;
    if (typeof v === 'number' && (!Number.isFinite(v) || v <= 0)) continue;
    if (k === 'actions' && (typeof v !== 'object' || Object.keys(v as object).length === 0)) continue;
    out[k] = v;
  }
  return out as ServerSettings;
}

/** initialize's initializationOptions: {frognano: settings}, the shape the server reads. */
export function initializationOptions(get: (key: string) => unknown): { frognano: ServerSettings } {
  return { frognano: serverSettings(get) };
}

/**
 * The model the server will use: the setting, else the environment the server inherits,
 * else the server's default.
 */
export function effectiveModel(s: ServerSettings, env: Record<string, string | undefined>): string {
  return s.model || env.FROGNANO_MODEL || 'frognano:4b';
}

/** Restart back-off after a crash: 1 s, 2 s, 4 s, … capped at capMs. */
export function backoffMs(attempt: number, baseMs = 1000, capMs = 30_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, Math.min(attempt, 20)));
}

/**
 * Crash bookkeeping for the error handler: crashes closer together than stableMs count up
 * (and lengthen the back-off); a server that ran stableMs resets the count. After maxCrashes
 * in a row it gives up, so a binary that dies at start does not loop forever.
 */
export class CrashCounter {
  private count = 0;
  private lastStart: number;
  constructor(private readonly now: () => number, readonly maxCrashes = 5, readonly stableMs = 120_000) {
    this.lastStart = now();
  }
  started(): void {
    this.lastStart = this.now();
  }
  /** Called when the server's connection closed: the delay before restarting, or undefined to give up. */
  crashed(): number | undefined {
    if (this.now() - this.lastStart >= this.stableMs) this.count = 0;
    if (this.count >= this.maxCrashes) return undefined;
    return backoffMs(this.count++);
  }
}

/** What the status-bar item shows. */
/** The server's answer to frognano/status (lsp/status.go). */
export interface ServerStatus {
  ollamaHost: string;
  model: string;
  ollama: 'ok' | 'unreachable' | 'error';
  ollamaVersion?: string;
  modelPresent: boolean;
  problem?: string;
  running: string[];
  /** The folder's watching, once a run started it (lsp/fresh.go FreshStatus). */
  workspace?: WorkspaceStatus;
  /** Set when runs use the model fine-tuning made for this repository (then `model`) in place of the configured one, its base (lsp/model.go FineTuned). */
  fineTuned?: FineTuned;
  /** Fine-tuning of the workspace's repository (lsp/finetune.go FineTuning); absent without a folder. */
  fineTuning?: FineTuning;
}

export interface FineTuning {
  state: 'off' | 'running' | 'stopped';
  repo: string;
  pid?: number;
  iteration?: number;
  phase?: string;
  fraction: number;
  detail?: string;
  waiting?: string;
  lastError?: string;
  ended?: string;
  outcome?: string;
  heldOutNow?: number;
  heldOutStart?: number;
  inBand: number;
  tasks: number;
  iterations: number;
  accepted: number;
  problems?: string[];
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** Fine-tuning in a few words for the status bar, while it runs; undefined otherwise. */
export function fineTuningBar(ft: FineTuning | undefined): string | undefined {
  if (ft?.state !== 'running') return undefined;
  if (ft.waiting) return 'fine-tuning: waiting';
  if (ft.phase) return `fine-tuning: ${ft.phase} ${pct(ft.fraction)}`;
  return 'fine-tuning: running';
}

/** One line about fine-tuning, for Show status and the tooltip. */
export function fineTuningLine(ft: FineTuning | undefined): string | undefined {
  if (!ft) return undefined;
  if (ft.state === 'off') return 'fine-tuning: off ("FrogNano: Start fine-tuning" starts it)';
  let line = ft.state === 'running' ? `fine-tuning: running (pid ${ft.pid})` : `fine-tuning: stopped (${ft.ended || 'ended without a word: killed?'})`;
  if (ft.phase) line += `, iteration ${ft.iteration ?? 0} ${ft.phase} ${pct(ft.fraction)}${ft.detail ? ' ' + ft.detail : ''}`;
  if (ft.waiting) line += `, waiting: ${ft.waiting}`;
  if (ft.heldOutNow !== undefined) line += `, held-out pass rate ${pct(ft.heldOutNow)}${ft.heldOutStart !== undefined ? ` (${pct(ft.heldOutStart)} at the start)` : ''}`;
  if (ft.lastError) line += `, last error: ${ft.lastError}`;
  for (const p of ft.problems ?? []) line += `, problem: ${p}`;
  return line;
}

export interface FineTuned {
  model: string;
  step: number;
  base: string;
}

/** The model runs use, in words: the fine-tuned one names its base and step. */
export function modelLine(model: string, backend: ServerStatus | undefined): string {
  const ft = backend?.fineTuned;
  return ft ? `${ft.model} (fine-tuned from ${ft.base}, step ${ft.step})` : model;
}

export interface WorkspaceStatus {
  watching: boolean;
  why?: string;
  /** The next run's copy is made (it is made after each run). */
  ready?: boolean;
  folders?: number;
  commit?: string;
  branch?: string;
}

/** One line about the folder's watching and HEAD, for the status description. */
export function workspaceLine(w: WorkspaceStatus | undefined): string | undefined {
  if (!w) return undefined;
  const head = w.commit ? `, HEAD ${w.commit.slice(0, 12)}${w.branch ? ' on ' + w.branch : ' (detached)'}` : '';
  if (!w.watching) return `workspace: not watched (${w.why ?? 'unknown reason'}); each run compares the folder${head}`;
  const n = w.folders ?? 0;
  return `workspace: watching ${n} folder${n === 1 ? '' : 's'}, next copy ${w.ready ? 'ready' : 'being made'}${head}`;
}

export interface StatusState {
  model: string;
  server: 'starting' | 'running' | 'stopped' | 'failed';
  runs: string[]; // titles of the runs in progress
  /** The latest frognano/status answer, when the server gave one. */
  backend?: ServerStatus;
}

export function statusText(s: StatusState): { text: string; tooltip: string } {
  if (s.runs.length > 0) {
    return { text: `$(loading~spin) FrogNano: working…`, tooltip: `${s.runs.join(', ')} (${s.model}). Click to see the status; FrogNano: Cancel stops it.` };
  }
  switch (s.server) {
    case 'running':
      if (s.backend && s.backend.ollama !== 'ok') {
        return { text: `$(warning) ${s.model}: Ollama ${s.backend.ollama}`, tooltip: s.backend.problem ?? `Ollama at ${s.backend.ollamaHost} is ${s.backend.ollama}` };
      }
      if (s.backend && !s.backend.modelPresent) {
        return { text: `$(warning) ${s.model}: not installed`, tooltip: s.backend.problem ?? `Ollama has no model ${s.model}` };
      }
      {
        // A fine-tuned model's name is a hash: the bar names its base and step instead.
        const model = s.backend?.fineTuned ? `$(hubot) ${s.backend.fineTuned.base} · fine-tuned step ${s.backend.fineTuned.step}` : `$(hubot) ${s.model}`;
        const ft = fineTuningBar(s.backend?.fineTuning);
        const ftLine = fineTuningLine(s.backend?.fineTuning);
        return {
          text: ft ? `${model} · ${ft}` : model,
          tooltip:
            `FrogNano server running, model ${modelLine(s.model, s.backend)}` +
            (s.backend ? `, Ollama ${s.backend.ollamaVersion ?? ''} at ${s.backend.ollamaHost}` : '') +
            (ftLine ? `; ${ftLine}` : ''),
        };
      }
    case 'starting':
      return { text: `$(sync~spin) ${s.model}`, tooltip: `FrogNano server starting, model ${s.model}` };
    default:
      return { text: `$(error) FrogNano`, tooltip: `FrogNano server ${s.server}: see the FrogNano output; FrogNano: Restart server starts it again` };
  }
}

/** The server command line: `<path> lsp`, with ~ expanded. */
export function serverCommand(path: string | undefined, home: string): { command: string; args: string[] } {
  let p = (path ?? '').trim() || 'frognano';
  if (p === '~' || p.startsWith('~/')) p = home + p.slice(1);
  return { command: p, args: ['lsp'] };
}
