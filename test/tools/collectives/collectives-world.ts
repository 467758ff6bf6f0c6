// Set-up for the Collectives tool tests: the tool world of the first-party tests with the
// Collectives app in one generation (2.x web routes on NC 29 or NC 30+, 3.x OCS) and two collectives.
import type { CollectivesGeneration, FakeCollective } from '../../fakes/nextcloud/collectives-store.ts';
import { startToolWorld, type ToolWorld } from '../first-party-fixture.ts';

export interface CollectivesWorld extends ToolWorld {
  math: FakeCollective;
  other: FakeCollective;
  landingId: number;
  fractionsId: number;
}

export const FRACTIONS = '# Fractions\n\nA fraction has a numerator and a denominator.\n';

/** `nc30`: Nextcloud 30+, where OCS-APIRequest alone passes the CSRF check of the 2.x routes. */
export async function startCollectivesWorld(generation: CollectivesGeneration | null, options: { nc30?: boolean } = {}): Promise<CollectivesWorld> {
  const w = await startToolWorld();
  w.nc.addUser({ id: 'carol', displayName: 'Carol', groups: [] });
  w.nc.collectives.generation = generation;
  w.nc.webSessions.ocsApiRequestPassesCsrf = options.nc30 === true;
  const store = w.nc.collectives;
  const math = store.createCollective('Math Team', { alice: 'RGDNVCK', bob: 'RGDNVCK', carol: 'RG' });
  const other = store.createCollective('Other', { bob: 'RGDNVCK' });
  const landingId = w.nc.dav.files.node('alice', 'Collectives/Math Team/Readme.md')!.fileId;
  const fractions = store.createPage('alice', math.id, landingId, 'Fractions');
  w.nc.dav.files.putFile('alice', 'Collectives/Math Team/Fractions.md', FRACTIONS);
  store.calls.length = 0;
  return { ...w, math, other, landingId, fractionsId: fractions.id };
}
