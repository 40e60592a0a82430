"""Learning from conversations: extraction, consolidation and the lifecycle jobs."""
