"""Groundhog's proxy package."""
