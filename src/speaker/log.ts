/** The speaker's logger is the shared one (src/log.ts); kept as a module for the speaker's imports. */
export * from '../log.ts';
