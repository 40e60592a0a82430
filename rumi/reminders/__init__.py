"""Reminders and scheduled tasks: stored in rumi.db, fired by the app's scheduler."""
