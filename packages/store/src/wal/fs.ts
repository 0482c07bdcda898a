// The few file operations the WAL makes, behind an interface so a test can
// stand between the WAL and the disk (drop unsynced bytes at a simulated
// power loss, slow an fdatasync down) while the files stay real.
import * as fs from 'node:fs';

export interface WalFile {
  /** Writes all of `buf` at `position` (into the page cache: not durable yet). */
  write(buf: Buffer, position: number): void;
  /** Makes every byte written so far durable; the event loop stays free meanwhile. */
  datasync(): Promise<void>;
  /**
   * Writes zeros over [from, to) and makes them durable, off the event loop:
   * space allocated ahead of the records that will land there.
   */
  fill(from: number, to: number): Promise<void>;
  close(): void;
}

export interface WalFs {
  list(dir: string): string[];
  read(path: string): Buffer;
  open(path: string): WalFile;
  /** Creates `path` as `size` bytes of holes (reading as zeros); WalFile.fill allocates them. */
  createSparse(path: string, size: number): Promise<void>;
  /** Cuts `path` to `length` bytes, then extends it back to `size` with holes (a torn tail repaired). */
  truncate(path: string, length: number, size: number): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  /** Makes the directory's entries (creates, renames, unlinks) durable. */
  syncDir(dir: string): void;
  mkdir(dir: string): void;
}

const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

class NodeWalFile implements WalFile {
  constructor(private readonly fd: number) {}

  write(buf: Buffer, position: number): void {
    let done = 0;
    while (done < buf.length) done += fs.writeSync(this.fd, buf, done, buf.length - done, position + done);
  }

  datasync(): Promise<void> {
    return new Promise((resolve, reject) => {
      fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve()));
    });
  }

  async fill(from: number, to: number): Promise<void> {
    for (let at = from; at < to; at += ZERO_CHUNK.length) {
      const n = Math.min(ZERO_CHUNK.length, to - at);
      await new Promise<void>((resolve, reject) => {
        fs.write(this.fd, ZERO_CHUNK, 0, n, at, (err) => (err ? reject(err) : resolve()));
      });
    }
    await this.datasync();
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

/**
 * The WAL's file operations for this process. KUBIT_STORE_FAULT_SYNC_DELAY_MS
 * (a fault for tests, as etcd's failpoints are) makes every fdatasync that
 * much slower: a slow disk, to show the member does not stall on it.
 */
export function processWalFs(env: NodeJS.ProcessEnv = process.env): WalFs {
  const delay = Number(env.KUBIT_STORE_FAULT_SYNC_DELAY_MS ?? 0);
  if (!(delay > 0)) return nodeWalFs;
  return {
    ...nodeWalFs,
    open(path) {
      const file = nodeWalFs.open(path);
      return {
        write: (buf, position) => file.write(buf, position),
        fill: (from, to) => file.fill(from, to),
        close: () => file.close(),
        async datasync() {
          await new Promise((r) => setTimeout(r, delay));
          await file.datasync();
        },
      };
    },
  };
}

export const nodeWalFs: WalFs = {
  list: (dir) => fs.readdirSync(dir),
  read: (path) => fs.readFileSync(path),
  open: (path) => new NodeWalFile(fs.openSync(path, 'r+')),
  async createSparse(path, size) {
    const fh = await fs.promises.open(path, 'w');
    try {
      await fh.truncate(size);
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
  truncate(path, length, size) {
    const fd = fs.openSync(path, 'r+');
    try {
      fs.ftruncateSync(fd, length);
      fs.ftruncateSync(fd, size);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
  rename: (from, to) => fs.renameSync(from, to),
  unlink: (path) => fs.unlinkSync(path),
  syncDir(dir) {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
  mkdir: (dir) => fs.mkdirSync(dir, { recursive: true }),
};
