"""Memory people can read on disk: MEMORY.md sync and merge, the journal, healing rumi.db."""
