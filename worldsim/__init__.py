"""worldsim: the seeded mock research world Groundhog's benchmark runs against, and its agent.

A real HTTP server (`python -m worldsim`, `worldsim.server.run`) whose every exogenous value is a
keyed hash of (seed, request key, occurrence), with per-branch sandboxes, dependency hints and an
oracle for the dependency ground truth; plus the agent (`worldsim.agent`) whose reward ranks
verify > deep > skim > guess only when it sees its own write. Module map: `noise` (keyed hash),
`corpus` (state), `render` (pure renderers), `dispatch` (request parsing and routing), `world`
(sandboxes, counters, statistics), `oracle`, `routes`/`admin`/`app` (HTTP), `config`, `server`,
`agent`, `simulate` (in-process conditions and calibration). The third world serves its tools
over MCP (`python -m worldsim --world mcp`): `mcp_desk` (its pure domain), `mcp_world` (the
MCPServer, per-session sandboxes, control routes), `mcp_agent` and `mcp_client` (its agent on
the official MCP client), `mcp_check` (its strategies in process).
"""
