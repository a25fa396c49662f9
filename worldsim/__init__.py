"""Groundhog's worldsim package."""
