// kubit edit: opens an object in $KUBE_EDITOR or $EDITOR, then writes the
// edited object back as an update guarded by the resourceVersion it was read
// at. An edit the server refuses is reopened with the error on top; saving it
// unchanged gives up and keeps a copy.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import * as yaml from 'js-yaml';
import { CliError, formatError } from '../errors.js';
import type { Factory } from '../factory.js';
import type { IO } from '../io.js';
import { objectName } from '../printers/output.js';
import { sortKeys } from '../printers/sortkeys.js';
import { toYaml } from '../printers/yaml.js';
import { sameJson } from '../rollout/deployment.js';
import { getObject } from './fetch.js';
import { resolveTargets } from './targets.js';

interface EditOptions {
  output?: string;
  filename?: string[];
  recursive?: boolean;
}

const HEADER = [
  'Edit the object below and save to apply it; close without saving to leave it as it is.',
  "Lines starting with '#' are ignored, and an empty file cancels the edit.",
  'If the server refuses the change, this file opens again with the reason at the top.',
];

export function editorCommand(env: NodeJS.ProcessEnv): string {
  return env.KUBE_EDITOR || env.EDITOR || 'vi';
}

/** Runs the editor on the file through the shell, so EDITOR may carry arguments ("code --wait"). */
function runEditor(editor: string, file: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', `${editor} "$1"`, 'kubit-edit', file], { stdio: 'inherit', env });
    child.once('error', (e) =>
      reject(new CliError(`there was a problem with the editor "${editor}": ${e.message}`)),
    );
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new CliError(
            `there was a problem with the editor "${editor}" (${signal ? `killed by ${signal}` : `exit code ${code}`})`,
          ),
        );
    });
  });
}

/** The text without comment lines (what kubectl ignores too). */
export function stripComments(text: string): string {
  return text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
}

function serialize(obj: KubeObject, json: boolean): string {
  return json ? `${JSON.stringify(sortKeys(obj), null, 4)}\n` : toYaml(obj);
}

function commented(lines: readonly string[]): string {
  return lines.map((l) => (l ? `# ${l}` : '#')).join('\n');
}

/** The error lines shown at the top of a reopened file. */
function errorHeader(e: unknown): string[] {
  const text = formatError(e).replace(/^error: /, '');
  return ['', ...text.split('\n')];
}

/** Parses what the user saved; a syntax error is reported like a refused change. */
function parseEdited(text: string, json: boolean): KubeObject {
  try {
    const v = json ? JSON.parse(text) : yaml.load(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error('the edited file is not an object');
    return v as KubeObject;
  } catch (e) {
    const why =
      e instanceof yaml.YAMLException && e.mark
        ? `line ${e.mark.line + 1}: ${e.reason}`
        : (e as Error).message;
    throw new CliError(`The edited file had a syntax error: ${why}`);
  }
}

async function editOne(
  f: Factory,
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string,
  json: boolean,
): Promise<void> {
  const io: IO = f.io;
  const original = await getObject(client, r, namespace, name);
  const dir = io.env.TMPDIR || tmpdir();
  const file = join(dir, `kubit-edit-${randomBytes(6).toString('hex')}.${json ? 'json' : 'yaml'}`);
  const editor = editorCommand(io.env);
  let body = serialize(original, json);
  let lastError: unknown;
  let keep = false;
  try {
    for (;;) {
      const header = commented([...HEADER, ...(lastError ? errorHeader(lastError) : [])]);
      await writeFile(file, `${header}\n#\n${body}`);
      await runEditor(editor, file, io.env);
      const saved = stripComments(await readFile(file, 'utf8'));
      if (saved.trim() === '') {
        io.out.write('Edit cancelled, no changes made.\n');
        return;
      }
      if (lastError !== undefined && saved.trim() === body.trim()) {
        // Reopened after an error and saved as it was: give up, keeping the user's work.
        io.err.write(`${formatError(lastError)}\n`);
        io.err.write(`A copy of your changes has been stored to "${file}"\n`);
        keep = true;
        throw new CliError('Edit cancelled, no valid changes were saved.');
      }
      body = saved;
      let edited: KubeObject;
      try {
        edited = parseEdited(saved, json);
      } catch (e) {
        lastError = e;
        continue;
      }
      if (sameJson(edited, original)) {
        io.out.write('Edit cancelled, no changes made.\n');
        return;
      }
      if (
        edited.apiVersion !== original.apiVersion ||
        edited.kind !== original.kind ||
        edited.metadata?.name !== original.metadata?.name
      ) {
        lastError = new CliError('At least one of apiVersion, kind and name was changed');
        continue;
      }
      try {
        // The resourceVersion read above travels in the object: a change made meanwhile is a Conflict.
        const updated = await client.update<KubeObject>(r, edited, { namespace });
        io.out.write(`${objectName(r, updated)} edited\n`);
        return;
      } catch (e) {
        if (!(e instanceof StatusError)) throw e;
        lastError = e;
      }
    }
  } finally {
    if (!keep) await rm(file, { force: true });
  }
}

export async function edit(f: Factory, args: string[], o: EditOptions): Promise<void> {
  const json = o.output === 'json';
  if (o.output && o.output !== 'json' && o.output !== 'yaml') {
    throw new CliError(`the edit output format must be "yaml" or "json", not "${o.output}"`);
  }
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  for (const t of targets) {
    if (t.names.length === 0) throw new CliError('resource(s) were provided, but no name was specified');
    for (const name of t.names) await editOne(f, client, t.r, t.namespace, name, json);
  }
}
