// What a knowledge source looks like to its API and its ingestion: the public view, the error with a status, URL normalisation, partition names and which failures retry.
import { EgressError } from '../egress/egress-fetch.ts';
import { NextcloudAuthError, NextcloudForbiddenError, NextcloudNotFoundError, NextcloudError } from '../nextcloud/errors.ts';
import { EmbeddingError } from './embeddings.ts';
import type { KnowledgeSourcesTable, SourceKind, SourceStage, SourceStatus } from '../storage/tables/knowledge-tables.ts';
import type { PartitionScope } from './vector-index.ts';

export type SourceRow = KnowledgeSourcesTable & { id: number };

export interface SourceFileView {
  fileKey: string;
  path: string;
  status: 'ready' | 'error';
  error: string | null;
  chunks: number;
}

export interface SourceView {
  id: number;
  botId: string;
  ownerUid: string;
  kind: SourceKind;
  label: string;
  fileId: string | null;
  url: string | null;
  status: SourceStatus;
  stage: SourceStage | null;
  progress: { current: number; total: number; percent: number };
  message: string | null;
  files: number;
  errors: number;
  chunks: number;
  embeddingModel: string | null;
  lastIndexedAt: number | null;
}

export class SourceError extends Error {
  override name = 'SourceError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function botScope(botId: string): PartitionScope {
  return { kind: 'bot', botId };
}

export function sourceGroup(sourceId: number): string {
  return `src:${sourceId}`;
}

/** http/https only, no credentials, no fragment; the canonical form used for de-duplication. */
export function normalizeSourceUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new SourceError(400, 'the URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SourceError(400, 'only http:// and https:// URLs can be added');
  if (url.username || url.password) throw new SourceError(400, 'URLs with a user name or password are not accepted');
  if (url.toString().length > 2048) throw new SourceError(400, 'the URL is longer than 2048 characters');
  url.hash = '';
  return url.toString();
}

export function view(r: SourceRow): SourceView {
  const percent = r.status === 'ready' ? 100 : r.progress_total > 0 ? Math.min(99, Math.floor((r.progress_current / r.progress_total) * 100)) : 0;
  return {
    id: r.id,
    botId: r.bot_id,
    ownerUid: r.owner_uid,
    kind: r.kind,
    label: r.label,
    fileId: r.file_id,
    url: r.url,
    status: r.status,
    stage: r.stage,
    progress: { current: r.progress_current, total: r.progress_total, percent },
    message: r.message,
    files: r.file_count,
    errors: r.error_count,
    chunks: r.chunk_count,
    embeddingModel: r.embedding_model,
    lastIndexedAt: r.last_indexed_at,
  };
}

/** Transient failures retry the job; problems with one file are that file's error. */
export function isTransient(err: unknown): boolean {
  if (err instanceof EmbeddingError) return err.retryable;
  if (err instanceof NextcloudError)
    return (
      !(err instanceof NextcloudNotFoundError || err instanceof NextcloudForbiddenError || err instanceof NextcloudAuthError) &&
      (err.status === 0 || err.status >= 500 || err.status === 429)
    );
  if (err instanceof EgressError) return err.code === 'timeout' || err.code === 'network' || (err.code === 'http-status' && err.status >= 500);
  return false;
}
