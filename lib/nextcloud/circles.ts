// Teams (the Circles app's OCS API), as the session's user sees them. One function per endpoint.
import type { NextcloudSession } from './client.ts';

type OcsCaller = Pick<NextcloudSession, 'ocs'>;

/** A Circles member as far as we read it; `userType` and `basedOn.source` say whether it is a user, group or team. */
export interface CirclesMember {
  id?: string;
  userId?: string;
  userType?: number;
  level?: number;
  local?: boolean;
  basedOn?: { source?: number } | null;
}

export interface Circle {
  id?: string;
  name?: string;
  displayName?: string;
  source?: number;
  initiator?: CirclesMember | null;
}

/** The teams the user belongs to (`GET /ocs/v2.php/apps/circles/circles`); 404 without the Circles app. */
export function listCircles(session: OcsCaller): Promise<Circle[]> {
  return session.ocs<Circle[]>('GET', '/ocs/v2.php/apps/circles/circles');
}

/** A team's members (`GET /ocs/v2.php/apps/circles/circles/{id}/members`); 404/403 when the user cannot see it. */
export function listCircleMembers(session: OcsCaller, circleId: string): Promise<CirclesMember[]> {
  return session.ocs<CirclesMember[]>('GET', '/ocs/v2.php/apps/circles/circles/{id}/members', { params: { id: circleId } });
}
