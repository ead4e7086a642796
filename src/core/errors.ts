/**
 * User-facing errors. A user error carries where it happened (file, line, object) and the exit
 * code the CLI ends with; the CLI prints `message` on one line, without a stack trace.
 * Anything that is not a UserError is a programming error and crashes with its stack.
 *
 * Exit codes (architecture note): 0 ok, 1 the answer is "no", 2 bad input or usage,
 * 3 cannot reach the cluster.
 */

export const EXIT_OK = 0;
export const EXIT_NO = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_UNREACHABLE = 3;

/** Base class of every error the CLI reports in one line. `exitCode` defaults to 2. */
export class UserError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_BAD_INPUT) {
    super(message);
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}

/** A snapshot file that cannot be read or parsed; the message names the file and line. */
export class InputError extends UserError {
  readonly file: string;
  readonly line: number | undefined;
  constructor(file: string, message: string, line?: number) {
    super(`${file}${line !== undefined ? `:${line}` : ''}: ${message}`);
    this.name = 'InputError';
    this.file = file;
    this.line = line;
  }
}

/**
 * A configuration MetalLB would reject. `object` is the reference of the offending object
 * (`metallb-system/IPAddressPool/public`, from objectRef) when one is to blame.
 */
export class ConfigError extends UserError {
  readonly object: string | undefined;
  constructor(message: string, object?: string) {
    super(object ? `${object}: ${message}` : message);
    this.name = 'ConfigError';
    this.object = object;
  }
}

/** The Kubernetes API server cannot be reached or refuses; exit 3. */
export class ClusterUnreachableError extends UserError {
  constructor(message: string) {
    super(message, EXIT_UNREACHABLE);
    this.name = 'ClusterUnreachableError';
  }
}
