// npm run bundle: the MCP bundle (.mcpb) Claude Desktop installs with one click, built with the official packager
// (@anthropic-ai/mcpb). Stages build/mcpb/ — manifest.json (version from package.json), icon.png, and server/ with
// dist/, schemas/ and the production dependencies from package-lock.json — validates the manifest, then packs
// build/sitefleet-VERSION.mcpb. Needs dist/ built (the npm script runs tsc first) and the npm registry (or its cache).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const out = join(root, 'build');
const stage = join(out, 'mcpb');
const server = join(stage, 'server');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const mcpb = join(root, 'node_modules', '.bin', 'mcpb');
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

rmSync(stage, { recursive: true, force: true });
mkdirSync(server, { recursive: true });
cpSync(join(root, 'dist'), join(server, 'dist'), { recursive: true, filter: (p) => !p.endsWith('.map') });
cpSync(join(root, 'schemas'), join(server, 'schemas'), { recursive: true });
const { scripts: _s, devDependencies: _d, files: _f, ...runtime } = pkg;
writeFileSync(join(server, 'package.json'), `${JSON.stringify(runtime, null, 2)}\n`);
cpSync(join(root, 'package-lock.json'), join(server, 'package-lock.json'));
// Only what runs: no dev tools, no lifecycle scripts (dist/ is already built), from the lock file.
run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], server);
rmSync(join(server, 'package-lock.json'));

const manifest = JSON.parse(readFileSync(join(root, 'bundle', 'manifest.json'), 'utf8'));
manifest.version = pkg.version;
writeFileSync(join(stage, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
cpSync(join(root, 'bundle', 'icon.png'), join(stage, 'icon.png'));

run(mcpb, ['validate', join(stage, 'manifest.json')], root);
const file = join(out, `sitefleet-${pkg.version}.mcpb`);
rmSync(file, { force: true });
run(mcpb, ['pack', stage, file], root);
console.log(file);
