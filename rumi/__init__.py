"""Rumi: a self-hosted assistant with a sandbox and a memory of its own."""

__version__ = "0.8.0"
