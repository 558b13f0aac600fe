"""Surveys: per-paper analysis, correlation, outline, draft, polish and exports."""
