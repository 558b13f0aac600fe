"""Prefect flows: orchestration only (tasks, retries, caching, mapping); the work lives in `papervault`."""

import os

# A research tool sends nothing home: no telemetry from the local Prefect server (set before Prefect loads).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
