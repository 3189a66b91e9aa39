// Server-created work-done progress (window/workDoneProgress/create, then $/progress):
// shown as a cancellable notification, and reported to the status bar while it runs.
//
// A static feature, registered after the client's own ProgressFeature: features initialize
// in order on every (re)start, so this handler replaces the default one (which only shows
// a spinner in the status bar) each time the server starts.
import * as vscode from 'vscode';
import {
  ClientCapabilities,
  FeatureState,
  LanguageClientOptions,
  StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import type { LanguageClient } from 'vscode-languageclient/node';

export type Middleware = NonNullable<LanguageClientOptions['middleware']>;

export interface RunSink {
  runStarted(token: string, title: string): void;
  runEnded(token: string): void;
}

export class RunProgressFeature implements StaticFeature {
  private readonly active = new Set<() => void>();
  private handler: vscode.Disposable | undefined;

  constructor(private readonly client: LanguageClient, private readonly sink: RunSink) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window = { ...capabilities.window, workDoneProgress: true };
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  initialize(): void {
    this.handler?.dispose();
    this.handler = this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => this.track(token));
  }

  private track(token: string | number): void {
    const key = String(token);
    let finish: (() => void) | undefined;
    let report: ((v: WorkDoneProgressReport) => void) | undefined;
    // A quick command's end can come before VS Code runs withProgress's task: the task then
    // finds it ended and closes the notification at once, instead of never.
    let ended = false;
    const end = () => {
      ended = true;
      sub.dispose();
      this.active.delete(end);
      this.sink.runEnded(key);
      finish?.();
    };
    const begin = (v: WorkDoneProgressBegin) => {
      this.sink.runStarted(key, v.title);
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: v.title, cancellable: v.cancellable ?? false },
        (progress, cancel) =>
          new Promise<void>((resolve) => {
            finish = resolve;
            if (ended) return resolve();
            cancel.onCancellationRequested(() => void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token }));
            if (v.message) progress.report({ message: v.message });
            report = (r) => r.message && progress.report({ message: r.message });
          }),
      );
    };
    const sub = this.client.onProgress(WorkDoneProgress.type, token, (v) => {
      if (v.kind === 'begin') begin(v);
      else if (v.kind === 'report') report?.(v);
      else end();
    });
    this.active.add(end);
  }

  /** The server stopped: end every notification it left open. */
  clear(): void {
    [...this.active].forEach((end) => end());
    this.handler?.dispose();
    this.handler = undefined;
  }
}
