"""Fixtures for the search tests."""
