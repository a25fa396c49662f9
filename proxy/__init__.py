"""Groundhog's proxy: mitmproxy plus the addon that puts every request through the resolver.

Modules: `addon` (the mitmproxy addon, `Groundhog`), `identity` (tape and branch from headers,
proxy credentials or defaults), `wire` (flows to and from the internal protocol's JSON),
`resolver_client` (aiohttp client for `/v1/resolve` and `/v1/record`), `upstream` (live
fetches the resolver wants recorded, failures included), `problems` (the proxy's own
problem+json answers), `server` (`run(...)`: mitmproxy configured so nothing goes live
silently). Start it with `python -m proxy --host H --port P --resolver-url URL --data DIR`.
"""
