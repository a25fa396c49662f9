"""The environment server: the environment and its FastAPI app."""
