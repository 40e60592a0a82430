"""Portable archives: one chat's .tar.gz (export/import) and the whole data dir (backup)."""
