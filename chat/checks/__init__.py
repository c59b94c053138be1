"""Answer checks: what a prompt tells students, checked before they see it (docs/ARCHITECTURE.md)."""
