"""Photos and documents: a vision model describes photos; documents land in the sandbox."""
