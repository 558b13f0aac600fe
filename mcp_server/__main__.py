"""`python -m mcp_server`: the same server as `papervault mcp` (stdio; flags as there)."""

from papervault.commands.mcp import mcp

mcp(prog_name="python -m mcp_server")
