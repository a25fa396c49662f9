"""A small OpenEnv environment for tests/groundhog/test_openenv_servers.py, laid out as
`openenv init` lays one out (models, server/app.py, client), on openenv-core's own base classes.
"""
