"""Fixtures for the chat tests."""
