"""The PostgreSQL + pgvector store: seed 001's `cto` schema plus Rumi's `rumi` schema."""
