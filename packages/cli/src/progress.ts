// Live progress for waits: on a terminal, a block of lines redrawn in place
// (ANSI cursor movement); otherwise each line is printed once when it changes.

import type { IO } from './io.js';

const ESC = '\u001b[';

export class LiveProgress {
  /** Lines currently drawn on the terminal (TTY mode). */
  private drawn = 0;
  /** Last text printed per line key (plain mode). */
  private readonly printed = new Map<string, string>();

  constructor(private readonly io: IO) {}

  /** Shows the current state; each line is "key: text" keyed by what precedes the first ": ". */
  update(lines: readonly string[]): void {
    if (this.io.isTTY) {
      let s = this.drawn > 0 ? `${ESC}${this.drawn}A\r` : '\r';
      for (const l of lines) s += `${ESC}2K${l}\n`;
      // A shorter block leaves old lines below it: clear to the end of the screen.
      if (lines.length < this.drawn) s += `${ESC}J`;
      this.io.err.write(s);
      this.drawn = lines.length;
      return;
    }
    for (const l of lines) {
      const sep = l.indexOf(': ');
      const key = sep < 0 ? l : l.slice(0, sep);
      if (this.printed.get(key) === l) continue;
      this.printed.set(key, l);
      this.io.err.write(`${l}\n`);
    }
  }

  /** Removes the block from the terminal (before a result line, or at the end). */
  clear(): void {
    if (this.io.isTTY && this.drawn > 0) this.io.err.write(`${ESC}${this.drawn}A\r${ESC}J`);
    this.drawn = 0;
  }
}
