import { pino, type Logger, type DestinationStream } from 'pino';
import { redactString, redactValue } from './redact.ts';

export type { Logger };

export interface LoggerOptions {
  level?: string;
  destination?: DestinationStream;
  /** Receives warnings and errors after redaction, e.g. to forward them to nextcloud.log. */
  onWarnOrError?: (level: 'warn' | 'error' | 'fatal', message: string) => void;
}

/** JSON logs on stdout. Every object and message passes the redactor before it is written. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const forward = options.onWarnOrError;
  return pino(
    {
      level: options.level ?? 'info',
      base: { app: 'educai' },
      formatters: { level: (label) => ({ level: label }), log: (obj) => redactValue(obj) as Record<string, unknown> },
      hooks: {
        logMethod(args, method, level) {
          const cleaned = args.map((a) => (typeof a === 'string' ? redactString(a) : a));
          if (forward && level >= 40) {
            const msg = cleaned.find((a): a is string => typeof a === 'string') ?? '';
            forward(level >= 60 ? 'fatal' : level >= 50 ? 'error' : 'warn', msg);
          }
          method.apply(this, cleaned as Parameters<typeof method>);
        },
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
