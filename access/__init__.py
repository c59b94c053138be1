"""Who may do what: the one set of access rules, used by pages, the API and websockets alike.

It sits above the models (it imports every app's models at the top level) and below the edges:
only views, API routers, consumers and the chat turn's orchestration import it; the domain writers
below it only raise `kernel.errors.Forbidden`/`NotFound` (import-linter contracts in .importlinter).
"""
