"""`python -m mcp_server`: the same as `papervault mcp` (stdio by default; same flags and errors)."""

import sys

from papervault.cli import main

main(["mcp", *sys.argv[1:]])
