"""Groundhog's proxy: mitmproxy plus the addon that puts every request through the resolver.

Modules: `addon` (the mitmproxy addon, `GroundhogAddon`), `identity` (tape and branch from headers,
proxy credentials or defaults), `wire` (flows to and from the internal protocol's JSON),
`resolver_client` (aiohttp client for the resolver's internal routes), `live` (a forwarded
ask followed through mitmproxy's own upstream path and recorded), `recording_stream` (buffer,
stream or pass a response; the capped body tee), `renewal` (claim renewal and deadlines),
`native` (mitmproxy's HTTP layer, adapted so failed live calls answer with Groundhog's
problem), `passthrough` (what is never recorded), `problems` (the proxy's own
problem+json answers), `server` (`run(...)`: mitmproxy configured so nothing goes live
silently). Start it with `python -m proxy --host H --port P --resolver-url URL --data DIR`.
"""
