"""What the parse workers' fork server imports once, so that each worker, a fork of it, starts with the parser
loaded (papervault.parse.batch.pool_context)."""

import papervault.parse.pdf  # noqa: F401
