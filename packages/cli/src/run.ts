// The kubit command line: global flags, one sub-command per verb. Each verb's
// module is imported only when that verb runs, so start-up stays fast.

import { Command, CommanderError, Option } from 'commander';
import { CliError, exitCodeOf, formatError } from './errors.js';
import { Factory, type GlobalOptions } from './factory.js';
import { type IO, processIO } from './io.js';
import { suggestions } from './suggest.js';

type Opts = Record<string, unknown>;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** --flag, --flag=true, --flag=false for booleans kubectl lets you switch off. */
function bool(value: string): boolean {
  if (value === 'true' || value === '') return true;
  if (value === 'false') return false;
  throw new CliError(`invalid boolean value "${value}"`);
}

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new CliError(`invalid integer value "${value}"`);
  return n;
}

export const VERBS = [
  'apply',
  'create',
  'get',
  'describe',
  'edit',
  'delete',
  'scale',
  'rollout',
  'logs',
  'wait',
  'label',
  'annotate',
  'cluster-info',
  'version',
  'api-resources',
  'completion',
  'config',
  'cluster',
  'image',
] as const;

function addFileOptions(c: Command): Command {
  return c
    .option('-f, --filename <file>', 'file, directory or - (stdin) with resources', collect)
    .option('-R, --recursive', 'process the directory given with -f recursively');
}

/** Builds the program; `act` runs a verb module with the factory. */
function buildProgram(
  io: IO,
  act: (verb: string, f: Factory, args: string[], opts: Opts) => Promise<void>,
): Command {
  const program = new Command('kubit');
  program
    .description('kubit controls a Kubit (Kubernetes) cluster.')
    .option('--kubeconfig <path>', 'path to the kubeconfig file to use')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--cluster <name>', 'the kubeconfig cluster to use')
    .option('--user <name>', 'the kubeconfig user to use')
    .option('-n, --namespace <ns>', 'the namespace scope for this request')
    .option('-s, --server <url>', 'the address and port of the API server')
    .option('--token <token>', 'bearer token for authentication')
    .option('--certificate-authority <file>', 'path to a cert file for the certificate authority')
    .option('--client-certificate <file>', 'path to a client certificate file for TLS')
    .option('--client-key <file>', 'path to a client key file for TLS')
    .addOption(
      new Option('--insecure-skip-tls-verify [bool]', "don't check the server's certificate").argParser(bool),
    )
    .option('--request-timeout <duration>', 'how long to wait for a single request (0: no timeout)')
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out.write(s),
      writeErr: (s) => io.err.write(s),
      outputError: () => {},
    });

  const global = (): GlobalOptions => program.opts<GlobalOptions>();
  const runVerb = (verb: string) =>
    async function (this: Command, ...params: unknown[]) {
      const cmd = params[params.length - 1] as Command;
      const opts = cmd.opts<Opts>();
      const args = params
        .slice(0, -2)
        .flatMap((p) => (Array.isArray(p) ? p : p === undefined ? [] : [String(p)]));
      const f = new Factory(global(), io);
      try {
        await act(verb, f, args, opts);
      } finally {
        f.close();
      }
    };

  addFileOptions(program.command('apply').description('apply a configuration to resources by file or stdin'))
    .option('-o, --output <format>', 'output format: name|json|yaml')
    .option('--dry-run <mode>', 'none|client|server', 'none')
    .option('--wait', 'wait until the applied objects are ready (pods Ready, others present)')
    .option('--timeout <duration>', 'how long --wait waits', '60s')
    .option('--field-manager <name>', 'name of the manager', 'kubectl-client-side-apply')
    .action(runVerb('apply'));

  addFileOptions(program.command('create').description('create resources from a file or stdin'))
    .argument('[args...]', 'or: namespace NAME')
    .option('-o, --output <format>', 'output format: name|json|yaml')
    .option('--dry-run <mode>', 'none|client|server', 'none')
    .action(runVerb('create'));

  addFileOptions(program.command('get').description('display one or many resources'))
    .argument('[args...]', 'TYPE[.VERSION][.GROUP] [NAME ...] | TYPE/NAME ...')
    .option('-o, --output <format>', 'json|yaml|name|wide|jsonpath=...|custom-columns=...')
    .option('-l, --selector <selector>', 'label selector')
    .option('--field-selector <selector>', 'field selector')
    .option('-A, --all-namespaces', 'list across all namespaces')
    .option('-w, --watch', 'after listing, watch for changes')
    .option('--watch-only', 'watch for changes without listing first')
    .option('--show-labels', 'show labels as the last column')
    .option('--show-managed-fields', 'keep metadata.managedFields in json and yaml output')
    .option('-L, --label-columns <keys>', 'labels to show as columns', collect)
    .option('--show-kind', 'show the resource type in names')
    .option('--sort-by <jsonpath>', 'sort by a JSONPath expression')
    .option('--no-headers', "don't print headers")
    .option('--chunk-size <n>', 'list in chunks of this size', int, 500)
    .option('--ignore-not-found', 'treat "not found" as success')
    .action(runVerb('get'));

  addFileOptions(program.command('describe').description('show details of a resource or group of resources'))
    .argument('[args...]', 'TYPE [NAME_PREFIX] | TYPE/NAME')
    .option('-l, --selector <selector>', 'label selector')
    .option('-A, --all-namespaces', 'across all namespaces')
    .addOption(new Option('--show-events [bool]', 'show events').argParser(bool).default(true))
    .action(runVerb('describe'));

  addFileOptions(
    program.command('delete').description('delete resources by names, files, stdin, or selectors'),
  )
    .argument('[args...]', 'TYPE NAME ... | TYPE/NAME ...')
    .option('-l, --selector <selector>', 'label selector')
    .option('--all', 'delete every object of the type in the namespace')
    .option('-A, --all-namespaces', 'across all namespaces')
    .option(
      '--grace-period <seconds>',
      'seconds the objects get to stop gracefully (-1: their default)',
      int,
      -1,
    )
    .option('--force', 'delete immediately (with --grace-period=0)')
    .option('--now', 'delete quickly (grace period 1)')
    .addOption(new Option('--wait [bool]', 'wait until the objects are gone').argParser(bool).default(true))
    .option('--timeout <duration>', 'how long to wait (0: a week)', '0s')
    .option('--ignore-not-found', 'treat "not found" as success')
    .option('-o, --output <format>', 'name: print only resource/name')
    .option('--dry-run <mode>', 'none|client|server', 'none')
    .action(runVerb('delete'));

  addFileOptions(program.command('edit').description('edit a resource on the server in your editor'))
    .argument('[args...]', 'TYPE NAME | TYPE/NAME')
    .option('-o, --output <format>', 'edit as yaml (default) or json')
    .action(runVerb('edit'));

  addFileOptions(program.command('scale').description('set a new size for a deployment or replica set'))
    .argument('[args...]', 'TYPE NAME ... | TYPE/NAME ...')
    .option('--replicas <count>', 'the new number of replicas', int)
    .option(
      '--current-replicas <count>',
      'only scale if the current size is this (-1: no condition)',
      int,
      -1,
    )
    .option('--resource-version <rv>', 'only scale if the resource version is this')
    .option('-l, --selector <selector>', 'label selector')
    .option('--all', 'every object of the type in the namespace')
    .action(runVerb('scale'));

  const rollout = program.command('rollout').description('manage the rollout of a deployment or daemon set');
  const rolloutCommand = (name: string, description: string) =>
    addFileOptions(rollout.command(name).description(description))
      .argument('[args...]', 'TYPE NAME | TYPE/NAME')
      .option('-l, --selector <selector>', 'label selector');
  rolloutCommand('status', 'show the status of the rollout, waiting until it finishes')
    .addOption(
      new Option('-w, --watch [bool]', 'watch until the rollout finishes').argParser(bool).default(true),
    )
    .option('--timeout <duration>', 'how long to wait (0: forever)', '0s')
    .option('--revision <n>', 'pin to a revision for the status', int, 0)
    .action(runVerb('rollout status'));
  rolloutCommand('history', 'list the revisions of the rollout')
    .option('--revision <n>', 'show the pod template of this revision', int, 0)
    .option('-o, --output <format>', 'json|yaml|name|jsonpath=...')
    .action(runVerb('rollout history'));
  rolloutCommand('undo', 'roll back to a previous revision')
    .option('--to-revision <n>', 'the revision to roll back to (0: the previous one)', int, 0)
    .action(runVerb('rollout undo'));
  rolloutCommand('restart', 'restart every pod of the deployment (a new rollout)').action(
    runVerb('rollout restart'),
  );
  rolloutCommand('pause', 'pause the rollout (changes to the template wait)').action(
    runVerb('rollout pause'),
  );
  rolloutCommand('resume', 'resume a paused rollout').action(runVerb('rollout resume'));

  program
    .command('logs')
    .description('print the logs of a container in a pod')
    .argument('<pod>', 'POD or TYPE/NAME')
    .argument('[container]', 'container name')
    .option('-c, --container <name>', 'container name')
    .option('-f, --follow', 'stream the logs')
    .option('--tail <lines>', 'lines from the end to show (-1: all)', int, -1)
    .option('-p, --previous', "the previous instance's logs")
    .option('--timestamps', 'prefix each line with its timestamp')
    .option('--since <duration>', 'only logs newer than this duration')
    .option('--since-time <time>', 'only logs after this RFC3339 time')
    .option('--all-containers', 'logs of every container')
    .option('--prefix', 'prefix each line with pod and container name')
    .action(runVerb('logs'));

  addFileOptions(program.command('wait').description('wait for a condition on one or many resources'))
    .argument('[args...]', 'TYPE NAME | TYPE/NAME')
    .requiredOption('--for <condition>', 'condition=Ready[=true], delete, jsonpath={.path}=value, create')
    .option('--timeout <duration>', 'how long to wait', '30s')
    .option('-l, --selector <selector>', 'label selector')
    .option('--all', 'every object of the type')
    .option('-A, --all-namespaces', 'across all namespaces')
    .action(runVerb('wait'));

  for (const verb of ['label', 'annotate'] as const) {
    program
      .command(verb)
      .description(`update the ${verb === 'label' ? 'labels' : 'annotations'} on a resource`)
      .argument('<args...>', `TYPE NAME KEY=VAL ... KEY- ...`)
      .option('--overwrite', 'allow replacing existing values')
      .option('--all', 'every object of the type in the namespace')
      .option('-l, --selector <selector>', 'label selector')
      .option('--list', 'list the current values')
      .option('--resource-version <rv>', 'only update if the object is at this version')
      .option('-o, --output <format>', 'name|json|yaml')
      .action(runVerb(verb));
  }

  program.command('cluster-info').description('display cluster information').action(runVerb('cluster-info'));
  program
    .command('version')
    .description('print the client and server version information')
    .option('--client', 'client version only')
    .option('-o, --output <format>', 'json|yaml')
    .action(runVerb('version'));
  program
    .command('api-resources')
    .description('print the supported API resources on the server')
    .addOption(
      new Option('--namespaced [bool]', 'only namespaced (true) or cluster-scoped (false)').argParser(bool),
    )
    .option('--api-group <group>', 'only this API group')
    .option('-o, --output <format>', 'wide|name')
    .option('--no-headers', "don't print headers")
    .option('--sort-by <field>', 'name|kind')
    .action(runVerb('api-resources'));
  program
    .command('completion')
    .description('output a shell completion script (bash or zsh)')
    .argument('<shell>', 'bash|zsh')
    .action(runVerb('completion'));

  program
    .command('cluster')
    .description('the one-machine clusters on this machine (./scripts/up)')
    .command('list')
    .description('list them: name, status, nodes, API address, pod and Service ranges, state directory')
    .option('-o, --output <format>', 'json|name')
    .option('--no-headers', "don't print headers")
    .action(runVerb('cluster list'));
  const image = program.command('image').description("load images into the cluster's registry, list them");
  image
    .command('load')
    .description(
      'push IMAGE (from the local Docker or containerd) or ARCHIVE (OCI, docker save) to the cluster',
    )
    .argument('<images...>', 'IMAGE or ARCHIVE (a tarball or an OCI layout directory)')
    .option('--name <name>', 'the name to load a single image under (NAME:TAG)')
    .option(
      '--nodes <names>',
      "import into these nodes' containerd (comma-separated) instead of the registry",
    )
    .option('--registry <host:port>', "the cluster's registry (default: KUBIT_REGISTRY, or the cluster's)")
    .option(
      '--containerd-address <path>',
      "containerd's socket, for images it holds",
      '/run/containerd/containerd.sock',
    )
    .action(runVerb('image load'));
  image
    .command('ls')
    .alias('list')
    .description("list the images in the cluster's registry, or in nodes' containerd (--nodes)")
    .option('--nodes <names>', "list what these nodes' containerd holds (comma-separated)")
    .option('--registry <host:port>', "the cluster's registry (default: KUBIT_REGISTRY, or the cluster's)")
    .option('--no-headers', "don't print headers")
    .action(runVerb('image ls'));

  const config = program.command('config').description('modify kubeconfig files');
  config
    .command('view')
    .option('--minify', 'only the current context')
    .option('--raw', 'show certificate data and tokens')
    .option('-o, --output <format>', 'yaml|json', 'yaml')
    .action(runVerb('config view'));
  config.command('current-context').action(runVerb('config current-context'));
  config.command('use-context').argument('<name>').action(runVerb('config use-context'));
  config
    .command('get-contexts')
    .argument('[name]')
    .option('-o, --output <format>', 'name')
    .option('--no-headers', "don't print headers")
    .action(runVerb('config get-contexts'));
  config
    .command('set-context')
    .argument('[name]')
    .option('--current', 'modify the current context')
    .option('--namespace <ns>', 'namespace of the context')
    .option('--cluster <name>', 'cluster of the context')
    .option('--user <name>', 'user of the context')
    .action(runVerb('config set-context'));
  return program;
}

async function dispatch(verb: string, f: Factory, args: string[], opts: Opts): Promise<void> {
  switch (verb) {
    case 'apply':
      return (await import('./commands/apply.js')).apply(f, opts);
    case 'create':
      return (await import('./commands/apply.js')).create(f, args, opts);
    case 'get':
      return (await import('./commands/get.js')).get(f, args, opts);
    case 'describe':
      return (await import('./commands/describe.js')).describe(f, args, opts);
    case 'delete':
      return (await import('./commands/delete.js')).del(f, args, opts);
    case 'edit':
      return (await import('./commands/edit.js')).edit(f, args, opts);
    case 'scale':
      return (await import('./commands/scale.js')).scale(f, args, opts);
    case 'logs':
      return (await import('./commands/logs.js')).logs(f, args, opts);
    case 'wait':
      return (await import('./commands/wait.js')).wait(f, args, opts as Opts & { for: string });
    case 'label':
    case 'annotate':
      return (await import('./commands/label.js')).label(f, verb, args, opts);
    case 'cluster-info':
      return (await import('./commands/info.js')).clusterInfo(f);
    case 'version':
      return (await import('./commands/info.js')).version(f, opts);
    case 'api-resources':
      return (await import('./commands/info.js')).apiResources(f, opts);
    case 'completion':
      return (await import('./commands/completion.js')).completion(f, args);
    default:
      if (verb.startsWith('rollout ')) {
        const m = await import('./commands/rollout.js');
        return m.rollout(f, verb.slice(8) as (typeof m.ROLLOUT_SUBCOMMANDS)[number], args, opts);
      }
      if (verb.startsWith('cluster '))
        return (await import('./commands/cluster.js')).cluster(f, verb.slice(8), opts);
      if (verb === 'image load') return (await import('./commands/image.js')).imageLoad(f, args, opts);
      if (verb === 'image ls') return (await import('./commands/image.js')).imageList(f, opts);
      if (verb.startsWith('config '))
        return (await import('./commands/config.js')).config(f, verb.slice(7), args, opts);
      throw new CliError(`unknown verb ${verb}`);
  }
}

/** Runs kubit with `argv` (without node and script); resolves with the exit code. */
export async function run(argv: readonly string[], io: IO = processIO()): Promise<number> {
  const program = buildProgram(io, dispatch);
  if (argv.length === 0) {
    io.out.write(program.helpInformation());
    return 0;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === 'commander.helpDisplayed' ||
        e.code === 'commander.version' ||
        e.code === 'commander.help'
      )
        return 0;
      if (e.code === 'commander.unknownCommand') {
        const typed = /'([^']+)'/.exec(e.message)?.[1] ?? '';
        let msg = `error: unknown command "${typed}" for "kubit"`;
        const close = suggestions(typed, VERBS);
        if (close.length > 0) msg += `\n\nDid you mean this?\n\t${close.join('\n\t')}`;
        io.err.write(`${msg}\n`);
        return 1;
      }
      if (e.code === 'commander.invalidArgument' && e.cause instanceof CliError) {
        io.err.write(`${formatError(e.cause)}\n`);
        return 1;
      }
      io.err.write(
        `${e.message.startsWith('error') ? e.message : `error: ${e.message}`}\nSee 'kubit --help' for usage.\n`,
      );
      return e.exitCode || 1;
    }
    const text = formatError(e);
    if (text) io.err.write(`${text}\n`);
    return exitCodeOf(e);
  }
}
