"""`python -m bench.reliability.proxy_runner`: the real proxy with short upstream timeouts.

`python -m proxy` has no flag for the addon's upstream timeouts (10 s connect, 60 s read), and an
upstream-timeout scenario cannot wait a minute per request. This runs exactly the same
`proxy.server.run` with the same arguments as `python -m proxy`, plus `--upstream-timeout`
setting the `groundhog_upstream_*_timeout` options (see the change request in
docs/reliability.md). Nothing else differs from the shipped proxy.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from proxy.__main__ import build_parser
from proxy.server import run


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    parser.add_argument("--upstream-timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    logging.getLogger("mitmproxy.proxy.server").setLevel(logging.WARNING)
    branch = args.branch or ("root" if args.tape else None)
    run(
        args.host,
        args.port,
        args.resolver_url,
        args.data,
        tape=args.tape,
        branch=branch,
        proxy_token=args.proxy_token,
        max_body_bytes=args.max_body_bytes,
        ssl_insecure=args.ssl_insecure,
        extra_options={
            "termlog_verbosity": args.log_level.lower(),
            "groundhog_upstream_connect_timeout": args.upstream_timeout,
            "groundhog_upstream_read_timeout": args.upstream_timeout,
        },
    )


if __name__ == "__main__":
    main()
