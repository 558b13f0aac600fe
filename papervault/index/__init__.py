"""The search index: fastembed vectors and LanceDB tables of paper chunks, searched hybrid and coarse-to-fine."""
