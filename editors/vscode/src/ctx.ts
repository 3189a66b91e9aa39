// Ctx owns the language client and everything that lives with it: the output channel, the
// status-bar item, the progress of runs, and their disposables.
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';

import { CrashCounter, effectiveModel, fineTuningLine, initializationOptions, modelLine, serverCommand, serverSettings, ServerStatus, statusText, StatusState, workspaceLine } from './logic';
import { Middleware, RunProgressFeature } from './progress';

export const section = 'frognano';
const languages = ['go', 'python', 'typescript', 'typescriptreact', 'javascript', 'javascriptreact'];

export class Ctx implements vscode.Disposable {
  client: LanguageClient | undefined;
  readonly output = vscode.window.createOutputChannel('FrogNano');
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  private readonly disposables: vscode.Disposable[] = [this.output, this.status];
  private readonly clientDisposables: vscode.Disposable[] = [];
  private serverState: StatusState['server'] = 'stopped';
  /** The runs in progress, by progress token. */
  readonly runs = new Map<string, string>();
  private readonly crashes = new CrashCounter(Date.now);

  constructor(readonly extension: vscode.ExtensionContext) {
    this.status.command = 'frognano.showStatus';
    // Ollama may be started or stopped at any time: look again every minute; while
    // fine-tuning runs, every 10 s, so that the bar follows its phases.
    let ticks = 0;
    const timer = setInterval(() => {
      if (++ticks % 6 === 0 || this.backend?.fineTuning?.state === 'running') void this.refreshBackend();
    }, 10_000);
    this.disposables.push({ dispose: () => clearInterval(timer) });
    this.status.name = 'FrogNano';
    this.updateStatus();
    this.status.show();
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${section}.path`)) void this.restart();
        else if (e.affectsConfiguration(section)) this.updateStatus();
      }),
    );
  }

  settings() {
    return serverSettings((k) => vscode.workspace.getConfiguration(section).get(k));
  }

  model(): string {
    return effectiveModel(this.settings(), process.env);
  }

  async start(): Promise<void> {
    if (this.client) return;
    const { command, args } = serverCommand(vscode.workspace.getConfiguration(section).get<string>('path'), os.homedir());
    // No transport: stdio, without the --stdio flag the client would add.
    const serverOptions: ServerOptions = { command, args };
    const middleware: Middleware = {
      workspace: {
        // The server pulls its section; answer with the server's keys only (not path, trace).
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) return result;
          return params.items.map((item, i) => (item.section === section ? this.settings() : result[i]));
        },
      },
      window: {
        // The fine-tuning report is an HTML page with its plots beside it: the server asks for
        // it to be shown externally, and the output channel keeps its path for the user.
        showDocument: async (params, next) => {
          if (params.external) this.output.appendLine(`[frognano] fine-tuning report: ${vscode.Uri.parse(params.uri).fsPath}`);
          const res = await next(params, new vscode.CancellationTokenSource().token);
          return 'success' in res ? res : { success: false };
        },
      },
      resolveCodeAction: async (item, token, next) => {
        // "Ask FrogNano…" picked from the light-bulb menu: ask for the instruction first.
        const data = (item as { data?: { action?: string; instruction?: string } }).data;
        if (data?.action === 'ask' && !data.instruction) {
          const text = await vscode.window.showInputBox({ prompt: 'Ask FrogNano', placeHolder: 'What should FrogNano do here?' });
          if (!text?.trim()) return undefined;
          data.instruction = text.trim();
        }
        return next(item, token);
      },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: languages.map((language) => ({ scheme: 'file', language })),
      initializationOptions: () => initializationOptions((k) => vscode.workspace.getConfiguration(section).get(k)),
      synchronize: { configurationSection: section },
      outputChannel: this.output,
      traceOutputChannel: this.output,
      middleware,
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: async () => {
          const delay = this.crashes.crashed();
          if (delay === undefined) {
            return { action: CloseAction.DoNotRestart, message: 'FrogNano: the server keeps crashing; see the FrogNano output, then run "FrogNano: Restart server".' };
          }
          this.output.appendLine(`[frognano] server stopped; restarting in ${delay / 1000}s`);
          await new Promise((r) => setTimeout(r, delay));
          this.crashes.started();
          return { action: CloseAction.Restart, handled: true };
        },
      },
    };
    const client = new LanguageClient(section, 'FrogNano', serverOptions, clientOptions);
    client.registerFeature(new RunProgressFeature(client, this));
    this.client = client;
    this.clientDisposables.push(
      client.onDidChangeState((e) => {
        this.serverState = e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped';
        if (e.newState !== State.Running) this.runs.clear();
        this.updateStatus();
        if (e.newState === State.Running) void this.refreshBackend();
      }),
    );
    this.serverState = 'starting';
    this.updateStatus();
    try {
      await client.start();
      this.crashes.started();
    } catch (e) {
      this.serverState = 'failed';
      this.updateStatus();
      const msg = `FrogNano: could not start \`${command} lsp\`: ${e instanceof Error ? e.message : String(e)}. Install frognano or set "frognano.path".`;
      this.output.appendLine(msg);
      void vscode.window.showErrorMessage(msg, 'Open Settings').then((pick) => {
        if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', 'frognano.path');
      });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.clientDisposables.splice(0).forEach((d) => d.dispose());
    this.runs.clear();
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.output.appendLine(`[frognano] stopping the server: ${String(e)}`);
      }
    }
    this.serverState = 'stopped';
    this.updateStatus();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  runStarted(token: string, title: string): void {
    this.runs.set(token, title);
    this.updateStatus();
  }

  runEnded(token: string): void {
    this.runs.delete(token);
    this.updateStatus();
    void this.refreshBackend();
  }

  private backend: ServerStatus | undefined;

  /** Asks the server whether Ollama answers and has the model (frognano/status). */
  async refreshBackend(): Promise<void> {
    const client = this.client;
    if (!client || this.serverState !== 'running') return;
    try {
      this.backend = await client.sendRequest<ServerStatus>('frognano/status', {});
    } catch (e) {
      this.output.appendLine(`[frognano] frognano/status: ${String(e)}`);
      this.backend = undefined;
    }
    this.updateStatus();
  }

  updateStatus(): void {
    const { text, tooltip } = statusText({ model: this.model(), server: this.serverState, runs: [...this.runs.values()], backend: this.backend });
    this.status.text = text;
    this.status.tooltip = tooltip;
  }

  describe(): string {
    const lines = [`server: ${this.serverState}${this.client?.initializeResult?.serverInfo?.version ? ` (frognano ${this.client.initializeResult.serverInfo.version})` : ''}`, `model: ${modelLine(this.model(), this.backend)}`];
    if (this.backend) {
      lines.push(`ollama: ${this.backend.ollama}${this.backend.ollamaVersion ? ' ' + this.backend.ollamaVersion : ''} at ${this.backend.ollamaHost}`);
      if (this.backend.problem) lines.push(this.backend.problem);
      const ws = workspaceLine(this.backend.workspace);
      if (ws) lines.push(ws);
      const ft = fineTuningLine(this.backend.fineTuning);
      if (ft) lines.push(ft);
    }
    for (const title of this.runs.values()) lines.push(`running: ${title}`);
    return lines.join('; ');
  }

  dispose(): void {
    void this.stop();
    this.disposables.splice(0).forEach((d) => d.dispose());
  }
}
