/** Row types of migration 0012-wiki-roots. Timestamps are ms since the epoch. */
export interface WikiRootsTable {
  bot_id: string;
  /** Who the root was registered for: the personal bot's owner, or the team bot's owner who configured the Collective. */
  uid: string;
  location: string;
  /** Relative to `uid`'s home; followed by file id when the folder moves. */
  root_path: string;
  root_file_id: string;
  /** The root folder's etag at the last sync (Nextcloud propagates changes below it). */
  root_etag: string;
  synced_at: number | null;
  updated_at: number;
}

export interface WikiTables {
  wiki_roots: WikiRootsTable;
}
