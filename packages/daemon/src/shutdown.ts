import type { Logger } from 'pino';

type Hook = () => Promise<void> | void;

/**
 * Graceful shutdown on SIGTERM/SIGINT: run the hooks in reverse order of
 * registration (last started, first stopped), then exit. A second signal, or
 * hooks that take longer than `timeoutMs`, force the exit.
 */
export class Shutdown {
  private readonly hooks: Hook[] = [];
  private stopping = false;

  constructor(
    private readonly log: Logger,
    private readonly timeoutMs = 10_000,
  ) {}

  add(hook: Hook): void {
    this.hooks.push(hook);
  }

  install(): void {
    const onSignal = (sig: NodeJS.Signals) => {
      if (this.stopping) {
        this.log.warn({ signal: sig }, 'second signal, exiting now');
        process.exit(130);
      }
      void this.run(sig);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }

  async run(reason: string): Promise<never> {
    this.stopping = true;
    this.log.info({ reason }, 'shutting down');
    const timer = setTimeout(() => {
      this.log.error({ timeoutMs: this.timeoutMs }, 'shutdown took too long, exiting');
      process.exit(1);
    }, this.timeoutMs);
    timer.unref();
    for (const hook of [...this.hooks].reverse()) {
      try {
        await hook();
      } catch (err) {
        this.log.error({ err }, 'shutdown hook failed');
      }
    }
    process.exit(0);
  }
}
