// Set-up for the Collectives tool tests: the tool world of the first-party tests with the
// Collectives app in one generation (2.x web routes, 3.x OCS) and two collectives.
import type { CollectivesGeneration, FakeCollective } from '../../fakes/nextcloud/collectives-store.ts';
import { startToolWorld, type ToolWorld } from '../first-party-fixture.ts';

export interface CollectivesWorld extends ToolWorld {
  math: FakeCollective;
  other: FakeCollective;
  landingId: number;
  fractionsId: number;
}

export const FRACTIONS = '# Fractions\n\nA fraction has a numerator and a denominator.\n';

export async function startCollectivesWorld(generation: CollectivesGeneration | null): Promise<CollectivesWorld> {
  const w = await startToolWorld();
  w.nc.addUser({ id: 'carol', displayName: 'Carol', groups: [] });
  w.nc.collectives.generation = generation;
  const store = w.nc.collectives;
  const math = store.createCollective('Math Team', { alice: 'RGDNVCK', bob: 'RGDNVCK', carol: 'RG' });
  const other = store.createCollective('Other', { bob: 'RGDNVCK' });
  const landingId = w.nc.dav.files.node('alice', 'Collectives/Math Team/Readme.md')!.fileId;
  const fractions = store.createPage('alice', math.id, landingId, 'Fractions');
  w.nc.dav.files.putFile('alice', 'Collectives/Math Team/Fractions.md', FRACTIONS);
  store.calls.length = 0;
  return { ...w, math, other, landingId, fractionsId: fractions.id };
}
