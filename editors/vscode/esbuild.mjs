// Bundles the extension (dist/extension.js) or, with --tests, the unit tests (out/test/).
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const tests = process.argv.includes('--tests');
const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: true, logLevel: 'warning' };

if (tests) {
  const entryPoints = readdirSync('test/unit').filter((f) => f.endsWith('.test.ts')).map((f) => `test/unit/${f}`);
  await build({ ...common, entryPoints, outdir: 'out/test' });
} else {
  await build({ ...common, entryPoints: { extension: 'src/main.ts' }, outfile: undefined, outdir: 'dist', external: ['vscode'], minify: process.argv.includes('--minify') });
}
