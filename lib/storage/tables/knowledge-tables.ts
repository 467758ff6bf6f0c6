/**
 * Row types added by migration 0008-knowledge (main database, both dialects).
 * Timestamps are ms since the epoch. The PostgreSQL-only vector tables are in
 * vector-index-postgres.ts.
 */
import type { Generated } from 'kysely';

export type SourceKind = 'file' | 'folder' | 'url';
export type SourceStatus = 'pending' | 'indexing' | 'ready' | 'error';
export type SourceStage = 'queued' | 'collecting' | 'extracting' | 'chunking' | 'embedding' | 'storing' | 'ready';
export type JobKind = 'source' | 'room-doc' | 'room-image';
export type JobStatus = 'queued' | 'running' | 'done' | 'failed';
export type RoomItemStatus = 'pending' | 'ready' | 'error';

export interface KnowledgeSourcesTable {
  id: Generated<number>;
  bot_id: string;
  owner_uid: string;
  kind: SourceKind;
  source_key: string;
  file_id: string | null;
  url: string | null;
  label: string;
  status: SourceStatus;
  stage: SourceStage | null;
  progress_current: number;
  progress_total: number;
  /** Error of the source, or a summary of per-file problems. */
  message: string | null;
  file_count: number;
  error_count: number;
  chunk_count: number;
  checksum: string | null;
  embedding_model: string | null;
  last_indexed_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface KnowledgeSourceFilesTable {
  source_id: number;
  file_key: string;
  path: string;
  etag: string | null;
  content_hash: string | null;
  embedding_model: string | null;
  status: 'ready' | 'error';
  error: string | null;
  chunk_count: number;
  updated_at: number;
}

export interface KnowledgeJobsTable {
  id: Generated<number>;
  kind: JobKind;
  ref_id: number;
  force: number;
  status: JobStatus;
  attempts: number;
  lease_until: number | null;
  worker_id: string | null;
  not_before: number;
  last_error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface RoomDocumentsTable {
  id: Generated<number>;
  bot_id: string;
  room_token: string;
  message_id: string;
  /** The message's author, confirmed by Talk; files are read as this user (S15). */
  actor_uid: string;
  file_id: string;
  name: string;
  mime_type: string;
  size: number;
  checksum: string | null;
  status: RoomItemStatus;
  error: string | null;
  chunk_count: number;
  embedding_model: string | null;
  created_at: number;
  updated_at: number;
}

export interface RoomImagesTable extends RoomDocumentsTable {
  vision_model: string | null;
  description: string | null;
}

export interface KnowledgeTables {
  knowledge_sources: KnowledgeSourcesTable;
  knowledge_source_files: KnowledgeSourceFilesTable;
  knowledge_jobs: KnowledgeJobsTable;
  room_documents: RoomDocumentsTable;
  room_images: RoomImagesTable;
}
