"""Removing what was said, not only what was learned: text rules, the redactor, /redact."""
