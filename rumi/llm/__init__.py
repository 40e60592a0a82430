"""The one Groq client: models, limits and pacing, errors, tool-call repair."""
