"""Voice notes: Groq speech-to-text, limits, and the audio seconds used today."""
