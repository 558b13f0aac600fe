"""The vault as a static site (mkdocs-material): generated pages in a staging folder, built offline."""
