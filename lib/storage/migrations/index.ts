import type { Migration } from 'kysely/migration';
import * as m0001 from './0001-foundation.ts';
import * as m0002 from './0002-talk-pipeline.ts';
import * as m0004 from './0004-tools.ts';
import * as m0005 from './0005-ratelimits-traces.ts';
import * as m0006 from './0006-governance.ts';
import * as m0007 from './0007-confirmations.ts';
import * as m0008 from './0008-knowledge.ts';
import * as m0009 from './0009-intake-inbox.ts';
import * as m0010 from './0010-confirmation-secrets.ts';
import * as m0011 from './0011-user-states.ts';
import * as m0012 from './0012-wiki-roots.ts';
import * as m0013 from './0013-inbox-route-key.ts';
import * as m0014 from './0014-agent-profiles.ts';
import * as m0015 from './0015-mcp-agent-credential.ts';
import * as m0016 from './0016-confirmation-reactions.ts';
import * as m0017 from './0017-scale-out.ts';

/** Ordered migrations; names sort in the order they must run. Append only. */
export const migrations: Record<string, Migration> = {
  '0001-foundation': m0001,
  '0002-talk-pipeline': m0002,
  '0004-tools': m0004,
  '0005-ratelimits-traces': m0005,
  '0006-governance': m0006,
  '0007-confirmations': m0007,
  '0008-knowledge': m0008,
  '0009-intake-inbox': m0009,
  '0010-confirmation-secrets': m0010,
  '0011-user-states': m0011,
  '0012-wiki-roots': m0012,
  '0013-inbox-route-key': m0013,
  '0014-agent-profiles': m0014,
  '0015-mcp-agent-credential': m0015,
  '0016-confirmation-reactions': m0016,
  '0017-scale-out': m0017,
};
