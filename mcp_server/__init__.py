"""The papervault MCP server: the vault's search, papers, figures and code as tools for agents."""

from mcp_server.server import build_server

__all__ = ["build_server"]
