"""`python -m bench.reliability.proxy_runner`: an alias of `python -m proxy`, kept for one caller.

It used to wrap `proxy.server.run` to set the addon's upstream timeouts, which `python -m proxy`
could not. `python -m proxy --upstream-timeout SECONDS` now does (reliability request P2), so
this only remains while bench/reliability/processes.py names it; delete it once that module
starts `proxy` directly.
"""

from __future__ import annotations

from proxy.__main__ import main

if __name__ == "__main__":
    main()
