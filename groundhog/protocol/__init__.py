"""The one protocol shared by the proxy, the resolver, the client, the benchmark and worldsim.

Header names (`headers`), decision and action words (`decisions`), problem+json documents
(`problems`), the proxy↔resolver wire shapes (`wire`) and the admin API's result shapes
(`admin`) are each declared once here and imported everywhere else: a name spelled twice is a
name that drifts. Everything here is standard library only, so the light worker install
(`groundhog-rl` without extras) imports it as readily as the services do.
"""
