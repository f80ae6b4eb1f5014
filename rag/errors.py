"""Errors a user can cause or fix. Every message says what to do next."""


class RagError(Exception):
    """Base class: pages and the CLI catch this, show the message and keep running."""


class ConfigError(RagError):
    """Settings, keys or names that do not make sense."""


class InputError(RagError):
    """A question, selection or file the user gave that cannot be used."""


class ProviderError(RagError):
    """A remote or local model provider failed (network, auth, rate limit, bad model files)."""


class BookIndexError(RagError):
    """The vector or lexical index is missing, stale, locked or unreachable."""


class AuditError(RagError):
    """The audit store is busy, locked or refused a query."""


class BudgetExceeded(RagError):
    """A pipeline stage ran over its time budget."""
