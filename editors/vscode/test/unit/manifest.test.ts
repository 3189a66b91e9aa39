// Checks of package.json's trust declaration, run by `npm test`: every setting is either
// restricted in untrusted workspaces or named here as harmless, so a new setting that names
// a binary, a host or an environment cannot slip in unrestricted.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

interface Manifest {
  capabilities?: { untrustedWorkspaces?: { supported: boolean | 'limited'; description?: string; restrictedConfigurations?: string[] } };
  contributes: { configuration: { properties: Record<string, { scope?: string }> } };
}

// out/test/ → the package's root.
const manifest: Manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));

/** Settings a repository may set even when untrusted: none runs code or sends it anywhere. */
const harmless = new Set([
  'frognano.trace.server', // logging into the output channel
  'frognano.model', // one of the models the user's own Ollama has
  'frognano.numCtx',
  'frognano.maxSteps',
  'frognano.maxMinutes',
  'frognano.actions', // which actions are offered
  'frognano.whenBusy',
  'frognano.watch', // a watched copy of the folder, in the user's cache
  'frognano.finetune.hours', // when a fine-tuning the user starts may work
]);

test('works in Restricted Mode, with limits', () => {
  const u = manifest.capabilities?.untrustedWorkspaces;
  assert.equal(u?.supported, 'limited');
  assert.ok(u?.description && u.description.length > 20, 'a description says what is limited');
});

test('every setting is restricted or known harmless', () => {
  const restricted = new Set(manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations ?? []);
  for (const must of ['frognano.path', 'frognano.ollamaHost', 'frognano.preview']) assert.ok(restricted.has(must), `${must} is restricted`);
  const props = manifest.contributes.configuration.properties;
  for (const key of Object.keys(props)) {
    assert.ok(restricted.has(key) !== harmless.has(key), `${key}: restricted in untrusted workspaces, or listed as harmless in this test (exactly one)`);
  }
  for (const key of restricted) assert.ok(key in props, `restricted ${key} is a declared setting`);
});
