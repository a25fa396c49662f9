"""Groundhog's resolver package."""
