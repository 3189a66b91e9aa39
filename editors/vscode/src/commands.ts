// The editor commands: each finds the server's code action at the selection and runs it
// through the server's own commands (frognano.run / frognano.ask / frognano.cancel). The
// server does the work, reports progress, and sends the change as workspace/applyEdit.
import * as vscode from 'vscode';
import { CodeAction, CodeActionParams, CodeActionRequest, Command, ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';

import { Ctx } from './ctx';
import { actionData, ActionData, askArguments, Commands, onlyKinds, pickAction, ReportResult, Wanted, WireAction } from './logic';

type Wants = keyof typeof Wanted;

/** The server's code actions of the given kinds at the active editor's selection, straight from the wire (with their data). */
async function actionsHere(client: LanguageClient, editor: vscode.TextEditor, only: string[]): Promise<WireAction[]> {
  const c2p = client.code2ProtocolConverter;
  const doc = editor.document;
  const sel = editor.selection;
  const line = new vscode.Range(sel.start.line, 0, sel.end.line, Number.MAX_SAFE_INTEGER);
  const diagnostics = vscode.languages.getDiagnostics(doc.uri).filter((d) => d.range.intersection(line));
  const params: CodeActionParams = {
    textDocument: c2p.asTextDocumentIdentifier(doc),
    range: c2p.asRange(sel),
    context: { diagnostics: await c2p.asDiagnostics(diagnostics), only },
  };
  const result = await client.sendRequest(CodeActionRequest.type, params);
  return (result ?? []).filter((a): a is CodeAction => !Command.is(a));
}

/** The client and the data of the wanted action at the cursor, or undefined after telling the user why not. */
async function find(ctx: Ctx, wants: Wants): Promise<{ client: LanguageClient; data: ActionData } | undefined> {
  const client = ctx.client;
  const editor = vscode.window.activeTextEditor;
  if (!client || !client.isRunning()) {
    void vscode.window.showWarningMessage('FrogNano: the server is not running (see "FrogNano: Show status").');
    return undefined;
  }
  if (!editor) {
    void vscode.window.showInformationMessage('FrogNano: open a file first.');
    return undefined;
  }
  const action = pickAction(await actionsHere(client, editor, onlyKinds(Wanted[wants])), Wanted[wants]);
  const data = action && actionData(action);
  if (!data) {
    void vscode.window.showInformationMessage(`FrogNano: nothing to ${wants === 'tests' ? 'write tests for' : wants} here.`);
    return undefined;
  }
  return { client, data };
}

/** Runs a server command. The server shows its own failures (window/showMessage), so they are only logged here. */
async function execute(ctx: Ctx, client: LanguageClient, command: string, args: unknown[]): Promise<void> {
  try {
    await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  } catch (e) {
    const err = e as { code?: number; message?: string };
    if (err.code !== -32800) ctx.output.appendLine(`[frognano] ${command}: ${err.message ?? String(e)}`);
  }
}

function runAction(ctx: Ctx, wants: Wants) {
  return async () => {
    const found = await find(ctx, wants);
    if (found) await execute(ctx, found.client, Commands.run, [found.data]);
  };
}

async function ask(ctx: Ctx): Promise<void> {
  const found = await find(ctx, 'ask');
  if (!found) return;
  const instruction = await vscode.window.showInputBox({
    title: 'Ask FrogNano',
    prompt: found.data.func ? `About ${found.data.func}` : 'About the selection',
    placeHolder: 'e.g. handle the empty input case',
  });
  if (!instruction?.trim()) return;
  await execute(ctx, found.client, Commands.ask, askArguments(found.data, instruction));
}

async function cancel(ctx: Ctx): Promise<void> {
  if (!ctx.client?.isRunning()) return;
  await execute(ctx, ctx.client, Commands.cancel, []);
}

/**
 * Starts or stops fine-tuning of the workspace's repository, or shows its report, through the
 * server, which does the work and says how it went (window/showMessage, errors included).
 */
async function fineTuning(ctx: Ctx, command: string): Promise<void> {
  const client = ctx.client;
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage('FrogNano: the server is not running (see "FrogNano: Show status").');
    return;
  }
  try {
    const result = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [] });
    const report = result as ReportResult | null;
    if (command === Commands.finetuneReport && report?.path && !report.shown) {
      // The server could not have it shown: open it here, and say where it is.
      ctx.output.appendLine(`[frognano] fine-tuning report: ${report.path}`);
      const opened = await vscode.env.openExternal(vscode.Uri.file(report.path));
      if (!opened) void vscode.window.showInformationMessage(`FrogNano: the fine-tuning report is ${report.path}`);
    }
  } catch (e) {
    const err = e as { message?: string };
    ctx.output.appendLine(`[frognano] ${command}: ${err.message ?? String(e)}`);
  }
  await ctx.refreshBackend();
}

async function showStatus(ctx: Ctx): Promise<void> {
  const pick = await vscode.window.showInformationMessage(`FrogNano: ${ctx.describe()}`, 'Show Output', 'Restart Server');
  if (pick === 'Show Output') ctx.output.show();
  if (pick === 'Restart Server') await ctx.restart();
}

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const reg = (id: string, fn: () => unknown) => vscode.commands.registerCommand(id, fn);
  return [
    reg('frognano.askAbout', () => ask(ctx)),
    reg('frognano.fix', runAction(ctx, 'fix')),
    reg('frognano.explain', runAction(ctx, 'explain')),
    reg('frognano.writeTests', runAction(ctx, 'tests')),
    reg('frognano.cancelRun', () => cancel(ctx)),
    reg('frognano.showStatus', () => showStatus(ctx)),
    // Not the server's command ids: the language client registers those itself.
    reg('frognano.startFineTuning', () => fineTuning(ctx, Commands.finetuneStart)),
    reg('frognano.stopFineTuning', () => fineTuning(ctx, Commands.finetuneStop)),
    reg('frognano.showFineTuningReport', () => fineTuning(ctx, Commands.finetuneReport)),
    reg('frognano.restartServer', () => ctx.restart()),
  ];
}
