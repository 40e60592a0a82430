"""Embeddings (fastembed, the int8 query twin) and the per-chat usearch index; no SQL."""
