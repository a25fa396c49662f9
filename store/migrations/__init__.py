"""Alembic migrations of the store's schema (env.py, versions/); run them with store.migrate."""
