"""Long-term memory in wings (store, vectors, recall, learning, files, redaction, archive);
the commands and the wiring sit at this level."""
