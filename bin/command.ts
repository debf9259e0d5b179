/**
 * What every `hd` command is made of, and the exit statuses they share.
 */
import type { parseArgs } from 'node:util';
import type { ProgressStream } from '../lib/progress';
import type { Registry } from '../pipelines/registry';

/** Where the command writes and what it reads from its surroundings; tests pass their own. */
export interface CliIo {
  readonly stdout: { write(s: string): unknown };
  readonly stderr: ProgressStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Stage types available to pipelines (default: the built-in ones). */
  readonly registry?: Registry;
  /** Whether `run` installs SIGINT / SIGTERM handlers (default true). */
  readonly handleSignals?: boolean;
}

/** Exit statuses of `hd`. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** One `hd` command: its help and what it runs. */
export interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly help: string;
  /** Positional arguments it takes (default 1: the pipeline file). */
  readonly positionals?: number;
  readonly options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  run(positionals: string[], values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number>;
}
