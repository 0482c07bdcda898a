// Reading manifests for -f: files, directories (-R to descend), "-" for stdin;
// YAML with several documents, JSON, and List objects flattened. Errors name
// the file and line, as kubectl's do.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import * as yaml from 'js-yaml';
import { CliError } from './errors.js';

export interface Manifest {
  /** Where it came from ("-" for stdin), for messages. */
  source: string;
  object: Record<string, unknown> & { apiVersion: string; kind: string; metadata?: Record<string, unknown> };
}

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Files named by -f, expanding directories (their subdirectories only with -R). */
export function expandPaths(paths: readonly string[], recursive: boolean): string[] {
  const out: string[] = [];
  const visit = (p: string, top: boolean) => {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      throw new CliError(`the path "${p}" does not exist`);
    }
    if (st.isDirectory()) {
      if (!top && !recursive) return;
      for (const e of readdirSync(p).sort()) {
        const child = join(p, e);
        if (statSync(child).isDirectory()) visit(child, false);
        else if (EXTENSIONS.has(extname(e))) out.push(child);
      }
    } else out.push(p);
  };
  for (const p of paths) {
    if (p === '-') out.push('-');
    else visit(p, true);
  }
  return out;
}

/** Parses one source's text into manifests (YAML or JSON, several documents, Lists flattened). */
export function parseManifests(text: string, source: string): Manifest[] {
  let docs: unknown[];
  try {
    docs = yaml.loadAll(text);
  } catch (e) {
    if (e instanceof yaml.YAMLException) {
      const line = e.mark ? e.mark.line + 1 : undefined;
      const where = line ? `line ${line}: ` : '';
      throw new CliError(`error parsing ${source}: error converting YAML to JSON: yaml: ${where}${e.reason}`);
    }
    throw e;
  }
  const out: Manifest[] = [];
  const add = (doc: unknown, index: number) => {
    if (doc === null || doc === undefined) return;
    if (!isRecord(doc))
      throw new CliError(`error validating "${source}": document ${index + 1} is not an object`);
    if (Array.isArray(doc.items) && typeof doc.kind === 'string' && doc.kind.endsWith('List')) {
      for (const item of doc.items) add(item, index);
      return;
    }
    const missing: string[] = [];
    if (typeof doc.apiVersion !== 'string' || !doc.apiVersion) missing.push('apiVersion not set');
    if (typeof doc.kind !== 'string' || !doc.kind) missing.push('kind not set');
    if (missing.length > 0)
      throw new CliError(`error validating "${source}": error validating data: [${missing.join(', ')}]`);
    out.push({ source, object: doc as Manifest['object'] });
  };
  docs.forEach(add);
  return out;
}

/** Every manifest named by -f. */
export async function readManifests(
  paths: readonly string[],
  recursive: boolean,
  readStdin: () => Promise<string>,
): Promise<Manifest[]> {
  if (paths.length === 0) throw new CliError('must specify one of -f and -k');
  const out: Manifest[] = [];
  for (const file of expandPaths(paths, recursive)) {
    const text = file === '-' ? await readStdin() : readFileSync(file, 'utf8');
    out.push(...parseManifests(text, file === '-' ? 'STDIN' : file));
  }
  if (out.length === 0) throw new CliError('no objects passed to apply');
  return out;
}
