/**
 * Who a Nextcloud call acts as. An ActingUser can only be issued by code that
 * verified the identity (the AppAPI header of an inbound request, or Talk's own
 * confirmation of a message's author). Tool arguments are plain JSON, so a
 * model can never produce one: the uid cannot come from model output.
 */
const ISSUE = Symbol('issue-acting-user');
const issued = new WeakSet<object>();

export type IdentitySource = 'appapi-request' | 'talk-message' | 'stored-principal' | 'agent-profile' | 'operator';

export class ActingUser {
  readonly uid: string;
  readonly source: IdentitySource;

  constructor(key: symbol, uid: string, source: IdentitySource) {
    if (key !== ISSUE) throw new TypeError('ActingUser can only be issued from a verified context');
    if (!uid || uid.length > 64 || /[\u0000-\u001f/\\]/.test(uid)) throw new TypeError('invalid uid');
    this.uid = uid;
    this.source = source;
    issued.add(this);
    Object.freeze(this);
  }
}

export function isIssued(user: unknown): user is ActingUser {
  return typeof user === 'object' && user !== null && issued.has(user);
}

/** Only for lib/appapi/auth-header.ts, after the secret was compared. */
export function issueFromVerifiedHeader(uid: string): ActingUser {
  return new ActingUser(ISSUE, uid, 'appapi-request');
}

/** Only for the Talk verifier, after Talk confirmed the message and its author. */
export function issueFromConfirmedTalkAuthor(uid: string): ActingUser {
  return new ActingUser(ISSUE, uid, 'talk-message');
}

/**
 * For background work on behalf of a principal recorded earlier from a
 * verified context (a bot's owner, a job's requester). Never call it with a
 * value that passed through a model.
 */
export function issueForStoredPrincipal(uid: string): ActingUser {
  return new ActingUser(ISSUE, uid, 'stored-principal');
}

/**
 * Only for the terminal playground (lib/cli/chat.ts): the operator, who holds APP_SECRET
 * and so may act as any user already, names the user on the command line.
 */
export function issueForOperator(uid: string): ActingUser {
  return new ActingUser(ISSUE, uid, 'operator');
}

/**
 * The service account of an admin-created agent profile. Only the execution resolver
 * (lib/agent-profiles/execution-resolver.ts) calls it, after the profile, its grant,
 * the invoker's trigger groups and the account check (S13) passed.
 */
export function issueForAgentProfile(uid: string): ActingUser {
  return new ActingUser(ISSUE, uid, 'agent-profile');
}
