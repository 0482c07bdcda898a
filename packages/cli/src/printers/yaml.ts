// YAML as kubectl prints it: keys sorted, list items not indented under their key.
// js-yaml is loaded on the first dump only: `get` with table output never needs it,
// and start-up time is what users feel most.
import { createRequire } from 'node:module';

type JsYaml = typeof import('js-yaml');
let lib: JsYaml | undefined;

function jsYaml(): JsYaml {
  lib ??= createRequire(import.meta.url)('js-yaml') as JsYaml;
  return lib;
}

export function toYaml(obj: unknown): string {
  return jsYaml().dump(obj, {
    sortKeys: true,
    seqNoIndent: true,
    lineWidth: -1,
    quoteStyle: 'double',
    noRefs: true,
  });
}
