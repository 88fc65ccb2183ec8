/**
 * A client generated from an endpoint's OpenAPI document by stock tools (openapi-typescript types +
 * openapi-fetch), type-checked under `tsc --strict` in a directory of its own, then imported to run, or run
 * as a program of its own the way a user runs one (`node --import=tsx client.ts`).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';

const ROOT = resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);

interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * Writes `schema.ts` (generated from `doc`) and `client.ts` (`source`, which imports `./schema.ts`), runs
 * `tsc --strict` on them, and imports the client. Resolves to the module, or rejects with tsc's output.
 */
export async function generatedClient<T>(t: Teardown, doc: unknown, source: string): Promise<T> {
  const dir = await typeChecked(t, doc, source);
  return (await import(pathToFileURL(join(dir, 'client.ts')).href)) as T;
}

/**
 * As generatedClient, with `source` a program: once it type-checks, it runs in a process of its own with
 * tsx, as `node --import=tsx client.ts`. Resolves to what it printed, or rejects with its error output.
 */
export async function generatedProgram(t: Teardown, doc: unknown, source: string): Promise<string> {
  const dir = await typeChecked(t, doc, source);
  try {
    const { stdout } = await exec(process.execPath, ['--import=tsx', 'client.ts'], {
      cwd: dir,
      timeout: 60_000,
    });
    return stdout;
  } catch (err) {
    const e = err as { code?: unknown; stderr?: string };
    throw new Error(`client.ts exited ${String(e.code)}: ${e.stderr ?? ''}`, { cause: err });
  }
}

/** The directory of the generated schema and `source`, once `tsc --strict` accepts them. */
async function typeChecked(t: Teardown, doc: unknown, source: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-openapi-client-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2023', 'DOM'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noUncheckedIndexedAccess: true,
        allowImportingTsExtensions: true,
        noEmit: true,
        types: [],
        skipLibCheck: true,
      },
      include: ['*.ts'],
    }),
  );
  writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(doc as never)));
  writeFileSync(join(dir, 'client.ts'), source);
  try {
    await exec(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      timeout: 120_000,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc: ${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
  return dir;
}
