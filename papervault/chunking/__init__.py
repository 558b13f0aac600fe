"""Chunking: papers into paper/section/paragraph/figure/table/note chunks (and code into code chunks)."""
