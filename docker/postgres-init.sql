-- Run once by the postgres service (docker/compose.yaml) when its volume is first created:
-- pgvector in Rumi's database. Rumi creates its schemas (cto, rumi) itself at first start.
CREATE EXTENSION IF NOT EXISTS vector;
