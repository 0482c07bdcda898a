// Reading a systemd unit the way systemd does, for the part the installer
// needs: the [Service] section's ExecStartPre/ExecStart, Environment= and
// EnvironmentFile=. Where there is no systemd (network-namespace labs) the
// installer runs exactly the command line this yields, so the unit file stays
// the one source of truth for how a daemon is started.

export interface UnitFile {
  /** Section name -> key -> values in file order (keys such as ExecStartPre repeat). */
  sections: Map<string, Map<string, string[]>>;
}

export function parseUnitFile(text: string): UnitFile {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  // systemd joins a line ending in a backslash with the next one.
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = sections.get(section[1]) ?? new Map();
      sections.set(section[1], current);
      continue;
    }
    const eq = line.indexOf('=');
    if (eq < 0 || !current) throw new Error(`not a unit file line: "${line}"`);
    const key = line.slice(0, eq).trim();
    const values = current.get(key) ?? [];
    values.push(line.slice(eq + 1).trim());
    current.set(key, values);
  }
  return { sections };
}

export function unitValues(unit: UnitFile, section: string, key: string): string[] {
  return unit.sections.get(section)?.get(key) ?? [];
}

/** Expands %i (the instance) and %% in a unit value; other specifiers are not used by Kubit's units. */
export function expandSpecifiers(value: string, instance: string): string {
  return value.replace(/%([%i])/g, (_m, c: string) => (c === '%' ? '%' : instance));
}

/** Splits a unit value into words with systemd's quoting: "..." and '...' group, \ escapes. */
export function splitWords(value: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < value.length) word += value[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < value.length) {
      word += value[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unbalanced quote in "${value}"`);
  if (inWord) words.push(word);
  return words;
}

/** Parses an EnvironmentFile: KEY=VALUE lines, # comments, quotes around a value removed. */
export function parseEnvironmentFile(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`not a KEY=VALUE line: "${line}"`);
    const key = line.slice(0, eq).trim();
    const words = splitWords(line.slice(eq + 1).trim());
    env.set(key, words.join(' '));
  }
  return env;
}

/**
 * Expands the variables of an Exec line as systemd does: a word that is just
 * `$VAR` becomes the value split on whitespace (zero or more words), `${VAR}`
 * inside a word is replaced in place. A variable that is not set is an error
 * here (systemd would silently make it empty, hiding a missing env file).
 */
export function expandExecWords(words: string[], env: Map<string, string>): string[] {
  const lookup = (name: string): string => {
    const v = env.get(name);
    if (v === undefined) throw new Error(`$${name} is not set by the unit's Environment or EnvironmentFile`);
    return v;
  };
  return words.flatMap((w) => {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(w);
    if (whole) return lookup(whole[1]).split(/\s+/).filter(Boolean);
    return [w.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => lookup(name))];
  });
}

export interface ExecLine {
  argv: string[];
  /** A leading "-": failure is ignored. */
  ignoreFailure: boolean;
}

/** An Exec value with its prefix characters (- @ : + !) taken off; Kubit's units use only "-". */
export function execLine(value: string, env: Map<string, string>): ExecLine {
  let v = value.trim();
  let ignoreFailure = false;
  while (/^[-@:+!]/.test(v)) {
    if (v[0] === '-') ignoreFailure = true;
    else throw new Error(`Exec prefix "${v[0]}" is not supported: "${value}"`);
    v = v.slice(1);
  }
  const argv = expandExecWords(splitWords(v), env);
  if (argv.length === 0) throw new Error(`empty Exec line "${value}"`);
  return { argv, ignoreFailure };
}

/** Everything needed to run a unit without systemd: its environment and Exec lines. */
export interface ServiceCommand {
  env: Map<string, string>;
  environmentFiles: string[];
  pre: ExecLine[];
  start: ExecLine;
  workingDirectory?: string;
}

/**
 * Resolves a unit's [Service] into command lines. `readFile` reads an
 * EnvironmentFile (a leading "-" makes a missing one optional, as in systemd).
 */
export function serviceCommand(
  unitText: string,
  instance: string,
  readFile: (path: string) => string | undefined,
): ServiceCommand {
  const unit = parseUnitFile(expandSpecifiers(unitText, instance));
  const env = new Map<string, string>();
  const environmentFiles: string[] = [];
  // As in systemd, an EnvironmentFile overrides Environment= for the same variable.
  for (const value of unitValues(unit, 'Service', 'Environment')) {
    for (const assignment of splitWords(value)) {
      const eq = assignment.indexOf('=');
      if (eq <= 0) throw new Error(`Environment= "${assignment}" is not KEY=VALUE`);
      env.set(assignment.slice(0, eq), assignment.slice(eq + 1));
    }
  }
  for (const value of unitValues(unit, 'Service', 'EnvironmentFile')) {
    const optional = value.startsWith('-');
    const path = optional ? value.slice(1) : value;
    const text = readFile(path);
    if (text === undefined) {
      if (optional) continue;
      throw new Error(`EnvironmentFile ${path} is missing`);
    }
    environmentFiles.push(path);
    for (const [k, v] of parseEnvironmentFile(text)) env.set(k, v);
  }
  const starts = unitValues(unit, 'Service', 'ExecStart');
  if (starts.length !== 1) throw new Error(`a unit needs exactly one ExecStart (found ${starts.length})`);
  const workingDirectory = unitValues(unit, 'Service', 'WorkingDirectory').at(-1);
  return {
    env,
    environmentFiles,
    ...(workingDirectory ? { workingDirectory } : {}),
    pre: unitValues(unit, 'Service', 'ExecStartPre').map((v) => execLine(v, env)),
    start: execLine(starts[0], env),
  };
}
