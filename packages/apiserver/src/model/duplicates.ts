// Duplicate fields of a JSON body. JSON.parse keeps the last of two equal
// keys without a word; Kubernetes' strict decoding names each duplicate
// ("duplicate field \"metadata.name\""), so a body is scanned once for them
// when field validation is on. The scan also numbers every field path in the
// order the body has them, so duplicate and unknown fields are reported in
// that order, as Kubernetes reports them.

export interface FieldScan {
  /** Paths of the second and later occurrences of a key, in body order. */
  duplicates: { path: string; at: number }[];
  /** Each field path's place in the body (its first occurrence). */
  order: Map<string, number>;
}

interface Frame {
  array: boolean;
  path: string;
  keys: Set<string>;
  index: number;
}

/** Scans valid JSON (it was parsed already); paths are written as decodeObject writes them. */
export function scanFields(text: string): FieldScan {
  const duplicates: FieldScan['duplicates'] = [];
  const order = new Map<string, number>();
  const stack: Frame[] = [];
  let seq = 0;
  /** The path of the value about to start in the innermost container. */
  let pendingKey: string | undefined;
  const childPath = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    if (top.array) return `${top.path}[${top.index}]`;
    return top.path ? `${top.path}.${pendingKey}` : (pendingKey ?? '');
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      stack.push({ array: c === 0x5b, path: childPath(), keys: new Set(), index: 0 });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.array) top.index++;
    } else if (c === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      for (; j < text.length; j++) {
        const d = text.charCodeAt(j);
        if (d === 0x5c) {
          escaped = true;
          j++;
        } else if (d === 0x22) break;
      }
      const top = stack[stack.length - 1];
      // A string directly in an object, followed by a colon, is a key.
      let k = j + 1;
      while (k < text.length && /\s/.test(text[k])) k++;
      if (top && !top.array && text[k] === ':') {
        const raw = text.slice(i + 1, j);
        const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
        pendingKey = key;
        const path = childPath();
        if (top.keys.has(key)) duplicates.push({ path, at: seq++ });
        else {
          top.keys.add(key);
          if (!order.has(path)) order.set(path, seq++);
        }
        i = k;
        continue;
      }
      i = j;
    }
  }
  return { duplicates, order };
}
