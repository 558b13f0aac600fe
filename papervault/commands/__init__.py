"""CLI commands, one module per command group; each opens the library, calls it, and prints.

The CLI imports every command module when it starts, so these modules import the library (the application
layer and below: LanceDB, PyMuPDF, Prefect, the MCP SDK behind it) inside each command's function: deferred on
purpose, `papervault --help` stays at about 0.17 s. Only click, the settings, the workspace, these helpers and
the small basics (errors, wording, timing, index/malloc.py) load at start-up (tests/test_cli_imports.py). Each deferred import
carries a comment saying so (tests/test_layers.py checks that every function-local import has one).
"""
