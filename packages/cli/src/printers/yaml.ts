// YAML as kubectl prints it: keys sorted, list items not indented under their key.
import * as yaml from 'js-yaml';

export function toYaml(obj: unknown): string {
  return yaml.dump(obj, {
    sortKeys: true,
    seqNoIndent: true,
    lineWidth: -1,
    quoteStyle: 'double',
    noRefs: true,
  });
}
