"""The vault: Markdown notes with YAML frontmatter, full texts and figures, in a git repository."""
