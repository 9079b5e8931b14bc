"""The exception that marks a mistake the user can fix, as opposed to an internal failure.

The library raises :class:`UserError` for an invalid config, a model, tokenizer or key that does
not fit it, and arguments or inputs it cannot use. It is a ``ValueError``, so code that catches
``ValueError`` keeps working. The command line (:mod:`watermark.app.cli`) exits with status 2 on it,
as on a missing file or package, and with status 1 on anything else (an internal failure).
"""

from __future__ import annotations


class UserError(ValueError):
    """A mistake the caller can fix; the message says what to change."""
