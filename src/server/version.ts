import pkg from '../../package.json' with { type: 'json' };

/** The service's version as /readyz, /metrics and status report it: the package's own (inlined by the bundler). */
export const SERVICE_VERSION: string = pkg.version;
