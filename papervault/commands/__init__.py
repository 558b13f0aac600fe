"""CLI commands, one module per command group; each opens the library, calls it, and prints."""
