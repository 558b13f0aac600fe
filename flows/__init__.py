"""Prefect flows: orchestration only (tasks, retries, caching, mapping); the work lives in `papervault`."""
