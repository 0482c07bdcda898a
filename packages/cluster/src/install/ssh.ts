// Running shell scripts on a host and copying a directory tree to it, with the
// system's OpenSSH client. Non-interactive (BatchMode): a host that asks for
// a password or whose key is unknown fails with ssh's reason instead of hanging.
import { spawn } from 'node:child_process';
import type { Host } from './inventory.js';

export interface SshOptions {
  /** known_hosts file; absent: ssh's default, accepting a host's key the first time. */
  knownHosts?: string;
  connectTimeoutSeconds?: number;
}

export class HostUnreachableError extends Error {
  constructor(host: Host, reason: string) {
    super(
      `cannot reach host ${host.name} over ssh (${host.ssh.user}@${host.address}:${host.ssh.port}): ${reason}`,
    );
    this.name = 'HostUnreachableError';
  }
}

export function sshArgs(host: Host, opts: SshOptions): string[] {
  const hostKeyOptions = opts.knownHosts
    ? ['-o', `UserKnownHostsFile=${opts.knownHosts}`, '-o', 'StrictHostKeyChecking=yes']
    : ['-o', 'StrictHostKeyChecking=accept-new'];
  return [
    '-i',
    host.ssh.key,
    '-p',
    String(host.ssh.port),
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    `ConnectTimeout=${opts.connectTimeoutSeconds ?? 10}`,
    '-o',
    'LogLevel=ERROR',
    ...hostKeyOptions,
    `${host.ssh.user}@${host.address}`,
  ];
}

/** Quotes a word for a POSIX shell. */
export function shQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface SshResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** ssh exits 255 for its own failures (connection, authentication, host key), else with the script's status. */
const SSH_FAILED = 255;

/**
 * Runs `script` with sh on the host (sent on stdin, so no quoting layer is
 * lost). `input`, when given, is piped in after a `--` is not possible, so
 * scripts that need data use runSshPipe.
 */
export function runSsh(host: Host, script: string, opts: SshOptions): Promise<SshResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('ssh', [...sshArgs(host, opts), 'sh -s'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    child.once('error', (err) => reject(new Error(`cannot run ssh: ${err.message}`)));
    child.once('close', (code) => {
      if (code === SSH_FAILED) {
        reject(new HostUnreachableError(host, stderr.trim() || 'ssh failed'));
        return;
      }
      resolve({ code: code ?? 1, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // reported by the exit status
    child.stdin.end(script);
  });
}

/** Runs `script` and fails with its output unless it exits 0. */
export async function runSshChecked(
  host: Host,
  what: string,
  script: string,
  opts: SshOptions,
): Promise<string> {
  const r = await runSsh(host, script, opts);
  if (r.code !== 0) {
    throw new Error(`${what} on ${host.name} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}

/**
 * Copies the tree under `localDir` onto the host's `/` (tar over ssh).
 * --no-overwrite-dir keeps the owner and mode of directories that exist (/tmp, /etc).
 */
export function copyTree(
  host: Host,
  localDir: string,
  remoteDir: string,
  opts: SshOptions,
  exclude: string[] = [],
): Promise<void> {
  return new Promise((resolve, reject) => {
    const excludes = exclude.map((e) => `--exclude=${e}`);
    const tar = spawn('tar', ['-C', localDir, ...excludes, '-cf', '-', '.'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const remote = `mkdir -p ${shQuote(remoteDir)} && tar -C ${shQuote(remoteDir)} --no-overwrite-dir -xf -`;
    const ssh = spawn('ssh', [...sshArgs(host, opts), remote], { stdio: ['pipe', 'pipe', 'pipe'] });
    tar.stdout.pipe(ssh.stdin);
    let tarErr = '';
    let sshErr = '';
    tar.stderr.on('data', (c: Buffer) => {
      tarErr += c;
    });
    ssh.stderr.on('data', (c: Buffer) => {
      sshErr += c;
    });
    ssh.stdin.on('error', () => {});
    tar.once('error', (err) => reject(new Error(`cannot run tar: ${err.message}`)));
    ssh.once('error', (err) => reject(new Error(`cannot run ssh: ${err.message}`)));
    let tarCode: number | null = null;
    tar.once('close', (code) => {
      tarCode = code;
    });
    ssh.once('close', (code) => {
      if (code === SSH_FAILED) reject(new HostUnreachableError(host, sshErr.trim() || 'ssh failed'));
      else if (code !== 0)
        reject(new Error(`copying files to ${host.name}:${remoteDir} failed: ${sshErr.trim()}`));
      else if (tarCode !== null && tarCode !== 0)
        reject(new Error(`tar of ${localDir} failed: ${tarErr.trim()}`));
      else resolve();
    });
  });
}
