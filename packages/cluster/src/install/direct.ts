// The installer's "direct" mode, for hosts without systemd (network-namespace
// labs, containers): each unit's ExecStart (after its ExecStartPre lines) is
// run as a detached process over ssh, with a PID file and a log file, from
// the very unit and env files the installer wrote to the host. Stopping goes
// by PID file, and only signals a PID whose command line is still one of ours.

import type { HostPaths, UnitRef } from './plan.js';
import { shQuote } from './ssh.js';
import { type ServiceCommand, serviceCommand } from './unit-file.js';

/** systemd's default PATH for services. */
const SERVICE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function pidFile(p: HostPaths, u: UnitRef): string {
  return `${p.run}/${u.name}.pid`;
}

export function logFile(p: HostPaths, u: UnitRef): string {
  return `${p.log}/${u.name}.log`;
}

/** Every command line the installer starts names the host's config dir: that tells ours from a reused PID. */
function marker(p: HostPaths): string {
  return p.etc;
}

/** The unit's command as systemd would run it, resolved from its unit and env files (read by `readFile`). */
export function unitCommand(
  p: HostPaths,
  u: UnitRef,
  readFile: (path: string) => string | undefined,
): ServiceCommand {
  const text = readFile(`${p.unitDir}/${u.template}`);
  if (text === undefined) throw new Error(`unit file ${p.unitDir}/${u.template} is missing`);
  try {
    return serviceCommand(text, u.instance, readFile);
  } catch (err) {
    throw new Error(`${u.name}: ${(err as Error).message}`);
  }
}

function envPrefix(cmd: ServiceCommand): string {
  const vars = [`PATH=${SERVICE_PATH}`, 'HOME=/root', ...[...cmd.env].map(([k, v]) => `${k}=${v}`)];
  return `env -i ${vars.map(shQuote).join(' ')}`;
}

/** A shell function `ours PIDFILE` that prints the PID when it is alive and ours. */
function oursFunction(p: HostPaths): string {
  return [
    'ours() {',
    '  [ -f "$1" ] || return 1',
    '  pid=$(cat "$1")',
    '  case "$pid" in ""|*[!0-9]*) return 1 ;; esac',
    '  [ -r /proc/$pid/cmdline ] || return 1',
    `  tr '\\000' ' ' < /proc/$pid/cmdline | grep -qF -- ${shQuote(marker(p))} || return 1`,
    '  grep -q "^State:.*Z" /proc/$pid/status && return 1',
    '  echo "$pid"',
    '}',
  ].join('\n');
}

/**
 * A script that starts the unit unless it runs: ExecStartPre lines first (a
 * "-" one may fail), then ExecStart in its own session with setsid, output
 * appended to the log; its PID goes to the PID file (env and setsid exec, so
 * $! is the daemon itself).
 */
export function startScript(p: HostPaths, u: UnitRef, cmd: ServiceCommand): string {
  const log = shQuote(logFile(p, u));
  const pid = shQuote(pidFile(p, u));
  const env = envPrefix(cmd);
  const lines = [
    'set -e',
    oursFunction(p),
    `mkdir -p ${shQuote(p.run)} ${shQuote(p.log)}`,
    `if ours ${pid} >/dev/null; then echo "${u.name} runs already"; exit 0; fi`,
    `cd ${shQuote(cmd.workingDirectory ?? '/')}`,
    `echo "--- $(date -u +%FT%TZ) started by kubit-install (direct mode)" >> ${log}`,
  ];
  for (const pre of cmd.pre) {
    const run = `${env} ${pre.argv.map(shQuote).join(' ')} >> ${log} 2>&1 < /dev/null`;
    lines.push(pre.ignoreFailure ? `${run} || true` : run);
  }
  lines.push(`${env} setsid ${cmd.start.argv.map(shQuote).join(' ')} >> ${log} 2>&1 < /dev/null &`);
  lines.push(`echo $! > ${pid}`);
  return `${lines.join('\n')}\n`;
}

/** Stops units in the given order by PID file: SIGTERM, up to 15 s, then SIGKILL. */
export function stopScript(p: HostPaths, units: UnitRef[]): string {
  const lines = [oursFunction(p)];
  for (const u of units) {
    const pid = shQuote(pidFile(p, u));
    lines.push(
      `if p=$(ours ${pid}); then`,
      '  kill -TERM "$p" 2>/dev/null || true',
      '  i=0; while [ $i -lt 150 ] && ours ' + pid + ' >/dev/null; do sleep 0.1; i=$((i+1)); done',
      `  if ours ${pid} >/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi`,
      `  echo "stopped ${u.name}"`,
      'fi',
      `rm -f ${pid}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Prints "NAME dead" plus the end of its log for every unit that is not running. */
export function statusScript(p: HostPaths, units: UnitRef[]): string {
  const lines = [oursFunction(p)];
  for (const u of units) {
    lines.push(
      `if ! ours ${shQuote(pidFile(p, u))} >/dev/null; then`,
      `  echo "== ${u.name} is not running; the end of ${logFile(p, u)}:"`,
      `  tail -n 8 ${shQuote(logFile(p, u))} 2>/dev/null || true`,
      'fi',
    );
  }
  return `${lines.join('\n')}\n`;
}
