// The extension's entry point: a Ctx owns the client; the commands sit on top of it.
import * as vscode from 'vscode';

import { registerCommands } from './commands';
import { Ctx } from './ctx';

let ctx: Ctx | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ctx = new Ctx(context);
  context.subscriptions.push(ctx, ...registerCommands(ctx));
  await ctx.start();
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}
