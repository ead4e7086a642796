/**
 * Contract between the conformance runner (run.ts) and the per-folder adapters. An adapter takes
 * one parsed case file and runs every case in it through the same core functions the CLI calls.
 */

/** Outcome of one case. `why` says what differed (required when ok is false). */
export interface CaseResult {
  name: string;
  ok: boolean;
  why?: string;
}

/** Runs the case files of one fixture family (config, allocator, controller, election). */
export interface SuiteAdapter {
  /** Short name, for messages. */
  readonly name: string;
  /** Whether this adapter runs `doc` (the parsed file at `file`). */
  accepts(file: string, doc: unknown): boolean;
  /** Runs every case of the file. Must not throw for a failing case: report it instead. */
  run(doc: any, file: string): CaseResult[] | Promise<CaseResult[]>;
}
